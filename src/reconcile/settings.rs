//! What a [`super::Reconciler`] is configured by, built once from the config: the scheduling
//! profiles (which carry `[model]` and `[cost]`), how a pass publishes (`[publish]`'s
//! mass-deletion guard, `[git]`) and the stability engine's `[reschedule]` settings.

use crate::config::{Config, ConfigError};
use crate::model::dimensions::ModelSettings;
use crate::publish;
use crate::schedule::profile::Profiles;
use crate::schedule::stability::StabilitySettings;

/// Everything a [`super::Reconciler`] is configured by.
#[derive(Default)]
pub struct Settings {
    /// Scheduling profiles (`[profiles.*]`, `[cost]`, `[model]`); a policy picks one by
    /// annotation.
    pub profiles: Profiles,
    /// Output safety settings (mass-deletion guard, git mode).
    pub publish: PublishSettings,
    /// Interpreter customizations of `[interpreter] dirs` and whether built-ins are used.
    pub interpreter: InterpreterSettings,
    /// `[reschedule]`: failover, descheduling, move-back, rate limit, storm guard.
    pub stability: StabilitySettings,
    /// How the policy repository is walked (`[policy]`).
    pub walk: crate::policy::load::WalkOptions,
    /// How Secrets are written (`[secrets]`, `[clusters.*] age_recipient`).
    pub secrets: crate::secrets::SecretsSettings,
}

/// What `[interpreter]` gives a pass: the directories' customizations, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterpreterSettings {
    pub directories: Vec<std::sync::Arc<crate::model::interpreter::Customization>>,
    pub builtins: bool,
}

impl Default for InterpreterSettings {
    fn default() -> Self {
        InterpreterSettings { directories: Vec::new(), builtins: true }
    }
}

impl Settings {
    /// From the config; `allow_mass_delete` is the command-line flag.
    pub fn from_config(cfg: &Config, allow_mass_delete: bool) -> Result<Settings, ConfigError> {
        Ok(Settings {
            profiles: cfg.profiles()?,
            publish: PublishSettings::from_config(cfg, allow_mass_delete),
            interpreter: InterpreterSettings {
                directories: cfg.interpreter.load()?,
                builtins: cfg.interpreter.builtins,
            },
            stability: cfg.reschedule.settings(),
            walk: cfg.policy.walk_options(),
            secrets: crate::secrets::SecretsSettings {
                mode: cfg.secrets.mode,
                recipients: cfg
                    .clusters
                    .iter()
                    .filter_map(|(c, a)| a.age_recipient.clone().map(|r| (c.clone(), r)))
                    .collect(),
            },
        })
    }

    /// The built-in profile only and the default publish settings (no config).
    pub fn builtin() -> Self {
        Settings {
            profiles: Profiles::builtin(),
            publish: PublishSettings::default(),
            interpreter: InterpreterSettings::default(),
            stability: StabilitySettings::default(),
            walk: Default::default(),
            secrets: Default::default(),
        }
    }

    /// The `[model]` section the profiles carry.
    pub fn model(&self) -> &ModelSettings {
        self.profiles.model()
    }
}

/// How a pass publishes: the mass-deletion guard, git mode, namespace propagation.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishSettings {
    pub guard: publish::DeleteGuard,
    /// `Some` = git mode: commit (and push) after publishing.
    pub git: Option<publish::git::GitOptions>,
    /// `[publish] namespaces`: each cluster directory gets the Namespaces of its objects.
    pub namespaces: bool,
    /// `[output] layout`: the output directory's index and root files.
    pub layout: crate::render::layout::Layout,
}

impl Default for PublishSettings {
    fn default() -> Self {
        PublishSettings {
            guard: publish::DeleteGuard::default(),
            git: None,
            namespaces: true,
            layout: Default::default(),
        }
    }
}

impl PublishSettings {
    /// From the `[publish]` and `[git]` sections; `allow_mass_delete` is the command-line flag.
    pub fn from_config(cfg: &Config, allow_mass_delete: bool) -> Self {
        let g = &cfg.git;
        PublishSettings {
            guard: publish::DeleteGuard {
                max_delete_ratio: cfg.publish.max_delete_ratio,
                allow: allow_mass_delete || cfg.publish.allow_mass_delete,
            },
            git: g.enabled.then(|| publish::git::GitOptions {
                author_name: g.author_name.clone(),
                author_email: g.author_email.clone(),
                remote: g.remote.clone(),
                branch: g.branch.clone(),
                push: g.push,
                push_timeout: g.push_timeout,
                ..Default::default()
            }),
            namespaces: cfg.publish.namespaces,
            layout: cfg.output.layout(cfg.secrets.mode),
        }
    }
}
