//! Built-in CPU performance tables (`[model] cpu_performance_table`, opt-in).
//!
//! One table exists: `azure-acu`, from Microsoft's published Azure Compute Unit figures
//! ("Overview of the Azure Compute Unit", learn.microsoft.com/azure/virtual-machines/acu: ACU per
//! vCPU by SKU family, Standard_A1 = 100, a range where the turbo/boost clock varies). It is the
//! only per-vCPU relative performance figure a public cloud publishes for its instance types;
//! AWS and Google publish none that covers their families, so no table is invented for them —
//! their members use `[model.cpu_performance]` entries.
//!
//! A factor is the family's mid-range ACU divided by that of the Dv3/Dsv3 family (160–190,
//! Azure's long-standing general-purpose baseline), so 1.0 is a Dv3 vCPU and a size the table
//! does not know counts 1.0 as everywhere else. Sizes are matched from the node label
//! `node.kubernetes.io/instance-type` (AKS sets it to the VM size, `Standard_D4s_v3`); the
//! families are told apart by series, version and the AMD `a` feature letter, as the ACU page
//! lists them. Families whose ACU the page gives as "Varies" (B) or does not list (the v5 and
//! later families, at the page's last revision) are not in the table.

use serde::{Deserialize, Serialize};

/// A built-in table of CPU performance factors by instance type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpuTable {
    /// Azure Compute Units per vCPU, relative to a Dv3 vCPU.
    #[serde(rename = "azure-acu")]
    AzureAcu,
}

impl CpuTable {
    /// The names accepted in `[model] cpu_performance_table`.
    pub const NAMES: &'static [&'static str] = &["azure-acu"];

    /// The table named `name` (as written in the configuration).
    pub fn named(name: &str) -> Option<CpuTable> {
        match name {
            "azure-acu" => Some(CpuTable::AzureAcu),
            _ => None,
        }
    }

    /// The factor of an instance type (a label value), None when the table does not know it.
    pub fn factor(self, instance_type: &str) -> Option<f64> {
        match self {
            CpuTable::AzureAcu => azure_acu(instance_type).map(|(lo, hi)| f64::from(lo + hi) / 2.0 / DV3_ACU),
        }
    }
}

/// Mid-range ACU of the Dv3/Dsv3 family (160–190): the factor 1.0.
const DV3_ACU: f64 = 175.0;

/// An Azure VM size taken apart: `Standard_D8as_v4` = series `D`, number 8, features `as`,
/// version 4 (0 without `_vN`).
struct AzureSize<'a> {
    series: &'a str,
    number: u32,
    features: &'a str,
    version: u32,
}

fn parse_azure(size: &str) -> Option<AzureSize<'_>> {
    let rest = size.strip_prefix("Standard_").or_else(|| size.strip_prefix("standard_"))?;
    let (name, version) = match rest.rsplit_once("_v") {
        Some((name, v)) => (name, v.parse::<u32>().ok()?),
        None => (rest, 0),
    };
    let series_end = name.find(|c: char| !c.is_ascii_uppercase())?;
    let (series, tail) = name.split_at(series_end);
    let digits_end = tail.find(|c: char| !c.is_ascii_digit()).unwrap_or(tail.len());
    let number: u32 = tail[..digits_end].parse().ok()?;
    // Constrained-vCPU sizes (`Standard_E4-2s_v3`) run on the family's hardware.
    let mut features = &tail[digits_end..];
    if let Some(after) = features.strip_prefix('-') {
        let end = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
        features = &after[end..];
    }
    if series.is_empty() || !features.chars().all(|c| c.is_ascii_lowercase()) {
        return None;
    }
    Some(AzureSize { series, number, features, version })
}

/// The ACU range per vCPU of an Azure size, as Microsoft's ACU page lists its family.
fn azure_acu(size: &str) -> Option<(u16, u16)> {
    let s = parse_azure(size)?;
    let amd = s.features.contains('a');
    let range = match (s.series, s.version) {
        ("A", 0) => match s.number {
            0 => (50, 50),
            1..=7 => (100, 100),
            8..=11 => (225, 225),
            _ => return None,
        },
        ("A", 2) => (100, 100),
        ("D" | "DS", 0) if (1..=14).contains(&s.number) => (160, 250),
        ("D" | "DS", 2) if (1..=15).contains(&s.number) => (210, 250),
        ("D" | "E", 3) if !amd => (160, 190),
        ("D" | "E", 4) if amd => (230, 260),
        ("D" | "E", 4) => (195, 210),
        ("F", 2) => (195, 210),
        ("F", 0) if (1..=16).contains(&s.number) => (210, 250),
        ("FX", _) => (310, 340),
        ("G" | "GS", 0) if (1..=5).contains(&s.number) => (180, 240),
        ("H", 0) => (290, 300),
        ("HB", 0) => (199, 216),
        ("HC", 0) => (297, 315),
        ("L", 0) if s.features.contains('s') => (180, 240),
        ("L", 2) => (150, 175),
        ("M", 0) => (160, 180),
        ("NV", 4) => (230, 260),
        _ => return None,
    };
    Some(range)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(size: &str) -> Option<f64> {
        CpuTable::AzureAcu.factor(size).map(|x| (x * 1000.0).round() / 1000.0)
    }

    #[test]
    fn azure_sizes_get_their_familys_mid_range_acu_relative_to_a_dv3_vcpu() {
        assert_eq!(f("Standard_D4s_v3"), Some(1.0));
        assert_eq!(f("Standard_E16_v3"), Some(1.0));
        assert_eq!(f("Standard_E4-2s_v3"), Some(1.0), "a constrained-vCPU size runs on its family's hardware");
        // AMD v4 (Dav4/Dasv4, Eav4/Easv4): 230–260.
        assert_eq!(f("Standard_D8as_v4"), Some(1.4));
        assert_eq!(f("Standard_E32a_v4"), Some(1.4));
        // Intel v4 (Dv4, Dsv4, Ddv4, Ddsv4, Ev4…): 195–210.
        assert_eq!(f("Standard_D8ds_v4"), Some(1.157));
        assert_eq!(f("Standard_F8s_v2"), Some(1.157));
        assert_eq!(f("Standard_DS3_v2"), Some(1.314));
        assert_eq!(f("Standard_FX12mds"), Some(1.857));
        assert_eq!(f("Standard_L16s_v2"), Some(0.929));
        assert_eq!(f("Standard_A1"), Some(0.571));
    }

    #[test]
    fn sizes_the_page_does_not_rate_are_not_in_the_table() {
        for size in [
            "Standard_B2s",     // "Varies"
            "Standard_D4s_v5",  // not listed
            "Standard_D4as_v3", // no such family
            "Standard_D99_v2",  // beyond D15_v2
            "m5.xlarge",        // another cloud
            "Standard_",
            "Standard_d4s_v3",
            "Standard_D4S_v3",
            "Standard_D4s_vx",
            "",
        ] {
            assert_eq!(f(size), None, "{size}");
        }
    }

    #[test]
    fn the_configured_names_are_the_tables() {
        for name in CpuTable::NAMES {
            assert!(CpuTable::named(name).is_some(), "{name}");
        }
        assert_eq!(CpuTable::named("aws"), None);
    }
}
