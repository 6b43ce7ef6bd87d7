//! The formats `run` can print on stdout.

/// What `run --format` prints on stdout.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Human,
    Ktap,
    Json,
    Junit,
    Kcidb,
}
