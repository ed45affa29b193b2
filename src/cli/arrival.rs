//! The arrival-shape flags of a paced run (flattened into [`super::Cli`]): `--burstiness` and `--ramp-up`.

use clap::Args;

/// `--burstiness`, `--ramp-up`.
#[derive(Debug, Clone, Default, Args)]
pub struct ArrivalArgs {
    /// Burstiness of paced arrivals (`--open-loop`, or `--rate` in a closed loop): gaps between requests are
    /// gamma-distributed with this shape and the mean set by `--rate`, as vLLM's flag: 1 = Poisson
    /// [default], < 1 burstier, > 1 more even.
    #[arg(
        long,
        value_name = "K",
        allow_negative_numbers = true,
        help_heading = "Load"
    )]
    pub burstiness: Option<f64>,

    /// Ramp the rate up linearly from 0 to `--rate` over the first D of a paced run (e.g. `30s`, `500ms`,
    /// `2m`, or plain seconds), then hold it; on the same absolute schedule.
    #[arg(long, value_name = "D", value_parser = parse_duration_s, help_heading = "Load")]
    pub ramp_up: Option<f64>,
}

/// `30s`, `500ms`, `2m`, `1h` or plain seconds → seconds (> 0).
fn parse_duration_s(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!(
            "{s:?} is not a duration > 0 (e.g. 30s, 500ms, 2m, or seconds)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_s("30s"), Ok(30.0));
        assert_eq!(parse_duration_s("500ms"), Ok(0.5));
        assert_eq!(parse_duration_s("2m"), Ok(120.0));
        assert_eq!(parse_duration_s("1.5"), Ok(1.5));
        assert!(parse_duration_s("0").is_err());
        assert!(parse_duration_s("soon").is_err());
    }
}
