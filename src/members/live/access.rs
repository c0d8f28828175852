//! Reaching a member: the targets (`[clusters.<name>]` joined with the Cluster object), the
//! kube client of each (kubeconfig, or `spec.apiEndpoint` + token file + CA), and how an
//! endpoint is shown (never with user info).

use super::*;

/// One member to poll: its name and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Cluster name (the Cluster object's and the output directory's).
    pub name: String,
    /// `[clusters.<name>]` from the configuration.
    pub access: ClusterAccess,
    /// The Cluster object's `spec.apiEndpoint` (used without a kubeconfig).
    pub api_endpoint: Option<String>,
    /// The Cluster object's `spec.insecureSkipTLSVerification`.
    pub insecure_skip_tls_verification: bool,
    /// The Cluster object's `spec.proxyURL`.
    pub proxy_url: Option<String>,
}

impl Target {
    /// The target of a Cluster object with configured access.
    pub fn new(c: &ClusterObject, access: &ClusterAccess) -> Target {
        Target {
            name: c.meta.name.clone(),
            access: access.clone(),
            api_endpoint: c.spec.api_endpoint.clone(),
            insecure_skip_tls_verification: c.spec.insecure_skip_tls_verification,
            proxy_url: c.spec.proxy_url.clone(),
        }
    }
}

/// The live targets: every `[clusters.<name>]` whose Cluster object is in the repository.
/// Returns the targets and the names configured without a Cluster object.
pub fn targets(cfg: &Config, set: &PolicySet) -> (Vec<Target>, Vec<String>) {
    let mut out = Vec::new();
    let mut unknown = Vec::new();
    for (name, access) in &cfg.clusters {
        match set.clusters.iter().find(|c| &c.meta.name == name) {
            Some(c) => out.push(Target::new(c, access)),
            None => unknown.push(name.clone()),
        }
    }
    (out, unknown)
}

pub(super) struct Built {
    pub(super) target: Target,
    pub(super) client: kube::Client,
    /// The client of watch streams: no read timeout (a watch is idle between events); the
    /// watcher bounds the wait for headers and for the next event itself.
    pub(super) watch_client: Option<kube::Client>,
    /// What `client` was built from (a watched cluster's list client is rebuilt after its
    /// list, so that the pooled connection and its large read buffer are let go).
    pub(super) config: kube::Config,
    pub(super) endpoint: String,
}

/// `https://host:port/path` of a target (user info removed), or `kubeconfig:<path>`.
pub fn describe_endpoint(t: &Target) -> String {
    match (&t.access.kubeconfig, &t.api_endpoint) {
        (Some(k), _) => format!("kubeconfig:{}", k.display()),
        (None, Some(e)) => strip_userinfo(e),
        (None, None) => "(no endpoint)".into(),
    }
}

pub(super) fn strip_userinfo(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

pub(super) async fn build(t: &Target, poll: &PollSection) -> Result<Built, PollError> {
    let access = |m: String| PollError::Access(m);
    let (mut cfg, endpoint) = match &t.access.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| access(format!("kubeconfig {}: {}", path.display(), chain(&e))))?;
            let opts = kube::config::KubeConfigOptions { context: t.access.context.clone(), ..Default::default() };
            let cfg = kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .map_err(|e| access(format!("kubeconfig {}: {}", path.display(), chain(&e))))?;
            let endpoint = strip_userinfo(&cfg.cluster_url.to_string());
            (cfg, endpoint)
        }
        None => {
            let Some(url) = t.api_endpoint.as_deref() else {
                return Err(access("no kubeconfig configured and the Cluster object has no spec.apiEndpoint".into()));
            };
            let uri: http::Uri =
                url.parse().map_err(|e| access(format!("spec.apiEndpoint {}: {e}", strip_userinfo(url))))?;
            let mut cfg = kube::Config::new(uri);
            if let Some(ca) = &t.access.ca_file {
                cfg.root_cert = Some(read_ca(ca)?);
            }
            match &t.access.token_file {
                Some(p) => {
                    // Checked here for a clear message; kube re-reads it (token rotation).
                    let token =
                        std::fs::read_to_string(p).map_err(|e| access(format!("token file {}: {e}", p.display())))?;
                    if token.trim().is_empty() {
                        return Err(access(format!("token file {} is empty", p.display())));
                    }
                    cfg.auth_info.token_file = Some(p.display().to_string());
                }
                None => return Err(access("token_file is required with the Cluster's spec.apiEndpoint".into())),
            }
            if t.insecure_skip_tls_verification {
                tracing::warn!(
                    cluster = %t.name,
                    "insecureSkipTLSVerification is set: the API server's certificate is not verified"
                );
                cfg.accept_invalid_certs = true;
            }
            if let Some(proxy) = &t.proxy_url {
                cfg.proxy_url =
                    Some(proxy.parse().map_err(|e| access(format!("spec.proxyURL {}: {e}", strip_userinfo(proxy))))?);
            }
            (cfg, strip_userinfo(url))
        }
    };
    cfg.connect_timeout = Some(poll.read_timeout);
    cfg.read_timeout = Some(poll.read_timeout);
    cfg.write_timeout = Some(poll.read_timeout);
    cfg.reset_reader_on_write = true;
    // Our own backoff decides when to try again; kube's retry would hide 503s inside a poll.
    cfg.default_retry = false;
    let watch_client = if poll.watch {
        let mut w = cfg.clone();
        w.read_timeout = None;
        Some(kube::Client::try_from(w).map_err(|e| access(format!("client: {}", chain(&e))))?)
    } else {
        None
    };
    let client = kube::Client::try_from(cfg.clone()).map_err(|e| access(format!("client: {}", chain(&e))))?;
    Ok(Built { target: t.clone(), client, watch_client, config: cfg, endpoint })
}

pub(super) fn read_ca(path: &Path) -> Result<Vec<Vec<u8>>, PollError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bytes = std::fs::read(path).map_err(|e| PollError::Access(format!("CA file {}: {e}", path.display())))?;
    let certs: Result<Vec<Vec<u8>>, _> =
        CertificateDer::pem_slice_iter(&bytes).map(|c| c.map(|c| c.as_ref().to_vec())).collect();
    match certs {
        Ok(c) if !c.is_empty() => Ok(c),
        Ok(_) => Err(PollError::Access(format!("CA file {}: no PEM certificate in it", path.display()))),
        Err(e) => Err(PollError::Access(format!("CA file {}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_shown_without_credentials() {
        assert_eq!(strip_userinfo("https://u:secret@10.0.0.1:6443/k8s"), "https://10.0.0.1:6443/k8s");
        assert_eq!(strip_userinfo("https://10.0.0.1:6443"), "https://10.0.0.1:6443");
    }
}
