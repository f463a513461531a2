//! Shards: the deterministic part of a suite's selected turns that one CI
//! job takes (`--shard I/N`), or that the CI engine's parallel-job
//! variables name (`--shard auto`).

/// Why a shard could not be named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("expected I/N with 1 ≤ I ≤ N (e.g. 2/4), or auto, got `{}`", crate::text::one_line(.0, 40))]
    Syntax(String),
    #[error(
        "--shard auto: none of the CI variables is set: {}",
        ci_variable_names()
    )]
    NoCiVariables,
    #[error("--shard auto: {engine}'s {index_var} is set but {total_var} is not")]
    NoTotal {
        engine: &'static str,
        index_var: &'static str,
        total_var: &'static str,
    },
    #[error(
        "--shard auto: {name} must be a whole number, got `{}`",
        crate::text::one_line(value, 40)
    )]
    NotANumber { name: &'static str, value: String },
    #[error(
        "--shard auto: {index_var}={index} does not fit {total_var}={count} ({engine} counts from {base})"
    )]
    OutOfRange {
        engine: &'static str,
        index_var: &'static str,
        index: usize,
        total_var: &'static str,
        count: usize,
        base: u8,
    },
}

fn ci_variable_names() -> String {
    let names: Vec<String> = CI_SHARD_VARIABLES
        .iter()
        .map(|(engine, index, _, total)| format!("{index}/{total} ({engine})"))
        .collect();
    names.join(", ")
}

/// `I/N`: this machine's part of the matrix (1-based I).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// The CI engines whose parallel-job variables `--shard auto` reads: the
/// index variable, whether it counts from 0, and the total variable.
pub const CI_SHARD_VARIABLES: [(&str, &str, u8, &str); 4] = [
    ("GitLab", "CI_NODE_INDEX", 1, "CI_NODE_TOTAL"),
    ("CircleCI", "CIRCLE_NODE_INDEX", 0, "CIRCLE_NODE_TOTAL"),
    (
        "Buildkite",
        "BUILDKITE_PARALLEL_JOB",
        0,
        "BUILDKITE_PARALLEL_JOB_COUNT",
    ),
    (
        "Kubernetes Indexed Job",
        "JOB_COMPLETION_INDEX",
        0,
        "PROMPTLAB_SHARD_TOTAL",
    ),
];

impl Shard {
    /// This job's shard from the first CI engine whose index variable is
    /// set (`lookup` reads the environment).
    pub fn from_ci(lookup: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        for (engine, index_var, base, total_var) in CI_SHARD_VARIABLES {
            let Some(index) = lookup(index_var) else {
                // A job that is not parallel: GitLab sets CI_NODE_TOTAL=1
                // and no index. It runs the whole suite.
                if lookup(total_var).is_some_and(|total| total.trim() == "1") {
                    return Ok(Shard { index: 1, count: 1 });
                }
                continue;
            };
            let total = lookup(total_var).ok_or(ShardError::NoTotal {
                engine,
                index_var,
                total_var,
            })?;
            let number = |name: &'static str, text: &str| {
                text.trim()
                    .parse::<usize>()
                    .map_err(|_| ShardError::NotANumber {
                        name,
                        value: text.to_string(),
                    })
            };
            let (index, count) = (number(index_var, &index)?, number(total_var, &total)?);
            let one_based = index.checked_add(usize::from(1 - base)).unwrap_or(0);
            if count == 0 || one_based == 0 || one_based > count {
                return Err(ShardError::OutOfRange {
                    engine,
                    index_var,
                    index,
                    total_var,
                    count,
                    base,
                });
            }
            return Ok(Shard {
                index: one_based,
                count,
            });
        }
        Err(ShardError::NoCiVariables)
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardError;
    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let parse = || {
            let (index, count) = text.split_once('/')?;
            let shard = Shard {
                index: index.trim().parse().ok()?,
                count: count.trim().parse().ok()?,
            };
            (shard.count >= 1 && (1..=shard.count).contains(&shard.index)).then_some(shard)
        };
        parse().ok_or_else(|| ShardError::Syntax(text.to_string()))
    }
}

impl Shard {
    /// Round-robin over the selected turns' order, so every shard gets a
    /// fair mix: `position` is the turn's place among them.
    pub fn takes(&self, position: usize) -> bool {
        position % self.count == self.index - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_matrix_without_overlap() {
        let shards: Vec<Shard> = ["1/3", "2/3", "3/3"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for position in 0..10 {
            assert_eq!(
                shards.iter().filter(|shard| shard.takes(position)).count(),
                1
            );
        }
        assert!("0/3".parse::<Shard>().is_err());
        assert!("4/3".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn ci_variables_name_the_shard() {
        let shard = |vars: &[(&str, &str)]| Shard::from_ci(env(vars));
        let gitlab = shard(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "3")]);
        assert_eq!(gitlab, Ok(Shard { index: 2, count: 3 }));
        let circle = shard(&[("CIRCLE_NODE_INDEX", "0"), ("CIRCLE_NODE_TOTAL", "4")]);
        assert_eq!(circle, Ok(Shard { index: 1, count: 4 }));
        let buildkite = shard(&[
            ("BUILDKITE_PARALLEL_JOB", "3"),
            ("BUILDKITE_PARALLEL_JOB_COUNT", "4"),
        ]);
        assert_eq!(buildkite, Ok(Shard { index: 4, count: 4 }));
        let k8s = shard(&[
            ("JOB_COMPLETION_INDEX", "1"),
            ("PROMPTLAB_SHARD_TOTAL", "2"),
        ]);
        assert_eq!(k8s, Ok(Shard { index: 2, count: 2 }));
        let none = shard(&[]).unwrap_err().to_string();
        assert!(
            none.contains("CI_NODE_INDEX/CI_NODE_TOTAL (GitLab)"),
            "{none}"
        );
        assert!(
            none.contains("JOB_COMPLETION_INDEX/PROMPTLAB_SHARD_TOTAL"),
            "{none}"
        );
        let out_of_range = shard(&[("CIRCLE_NODE_INDEX", "4"), ("CIRCLE_NODE_TOTAL", "4")]);
        assert!(
            out_of_range
                .unwrap_err()
                .to_string()
                .contains("counts from 0")
        );
        let zero_gitlab = shard(&[("CI_NODE_INDEX", "0"), ("CI_NODE_TOTAL", "4")]);
        assert!(zero_gitlab.is_err());
        assert_eq!(
            shard(&[("CI_NODE_TOTAL", "1")]),
            Ok(Shard { index: 1, count: 1 }),
            "a GitLab job without `parallel:` is the one shard"
        );
        let no_total = shard(&[("CI_NODE_INDEX", "1")]).unwrap_err().to_string();
        assert!(no_total.contains("CI_NODE_TOTAL is not"), "{no_total}");
        let huge = shard(&[
            ("CIRCLE_NODE_INDEX", &u64::MAX.to_string()),
            ("CIRCLE_NODE_TOTAL", "2"),
        ]);
        assert!(huge.is_err());
    }
}
