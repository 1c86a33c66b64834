//! `--shard K/N`: one machine's share of a sweep. The matrix ([`super::sweep::plan`]) is dealt
//! round-robin: shard K of N runs the runs whose index in plan order is K-1 modulo N. Every
//! machine computes the same plan from the same spec, so the shares are disjoint, together
//! they are the whole matrix, and each one mixes traces and schemes (a shard never gets only
//! the slow schemes). `alcc experiment merge` ([`super::merge`]) joins the shards' output
//! directories into one.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context, Result};

/// Shard `index` (from 1) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which share, 1 to `count`.
    pub index: u32,
    /// How many shares the sweep is cut into.
    pub count: u32,
}

/// The file in a shard's output directory that records which shard it holds.
pub const SHARD_FILE: &str = "shard.txt";

impl FromStr for Shard {
    type Err = String;

    /// `K/N` with 1 <= K <= N.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}` is not a shard: write K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether the run at `position` in plan order (from 0) belongs to this shard.
    pub fn holds(&self, position: usize) -> bool {
        position % self.count as usize == (self.index - 1) as usize
    }

    /// This shard's items of `plan`, in plan order.
    pub fn select<T>(&self, plan: Vec<T>) -> Vec<T> {
        plan.into_iter().enumerate().filter(|(i, _)| self.holds(*i)).map(|(_, p)| p).collect()
    }

    /// Records the shard in `out/shard.txt`, refusing a directory that holds another shard
    /// (or an unsharded sweep: `None`) of the same spec unless `force`.
    pub fn claim(shard: Option<Shard>, out: &Path, force: bool) -> Result<()> {
        let path = out.join(SHARD_FILE);
        let had = read(out)?;
        let has_runs = out.join("runs").is_dir();
        if had != shard && (had.is_some() || has_runs) && !force {
            let what = |s: Option<Shard>| s.map_or("the whole sweep".to_string(), |s| format!("shard {s}"));
            bail!(
                "{} holds {} of this experiment, not {}; choose another --out, or pass --force to discard its runs",
                out.display(),
                what(had),
                what(shard)
            );
        }
        if had != shard && force {
            let _ = std::fs::remove_dir_all(out.join("runs"));
            for stale in ["results.csv", "results.json"] {
                let _ = std::fs::remove_file(out.join(stale));
            }
        }
        match shard {
            Some(s) => super::table::write_atomic(&path, format!("{s}\n").as_bytes()),
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("{}: cannot remove", path.display()))
                }
                _ => Ok(()),
            },
        }
    }
}

/// The shard recorded in `out`, if any.
pub fn read(out: &Path) -> Result<Option<Shard>> {
    let path = out.join(SHARD_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            text.trim().parse::<Shard>().map(Some).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("{}: cannot read", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k_of_n_and_refuses_the_rest() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(" 1/1 ".parse::<Shard>(), Ok(Shard { index: 1, count: 1 }));
        for bad in ["0/4", "5/4", "1/0", "2", "a/b", "1/2/3", "-1/2", ""] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("K/N"), "{bad}: {e}");
        }
        assert_eq!(Shard { index: 3, count: 7 }.to_string(), "3/7");
    }

    #[test]
    fn shares_are_disjoint_complete_and_deterministic() {
        for count in 1..=7u32 {
            let plan: Vec<usize> = (0..23).collect();
            let mut seen = Vec::new();
            for index in 1..=count {
                let s = Shard { index, count };
                let share = s.select(plan.clone());
                assert_eq!(share, s.select(plan.clone()), "same plan, same share");
                assert!(share.windows(2).all(|w| w[0] < w[1]), "plan order kept");
                // Round-robin: shares differ in size by at most one run.
                assert!(share.len().abs_diff(plan.len() / count as usize) <= 1);
                seen.extend(share);
            }
            seen.sort_unstable();
            assert_eq!(seen, plan, "{count} shards cover every run exactly once");
        }
    }

    #[test]
    fn a_directory_keeps_its_shard() {
        let dir = std::env::temp_dir().join(format!("alcc-shard-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("runs")).unwrap();
        let one = Some(Shard { index: 1, count: 2 });
        let two = Some(Shard { index: 2, count: 2 });
        // A directory with runs but no shard file holds an unsharded sweep.
        let e = Shard::claim(one, &dir, false).unwrap_err().to_string();
        assert!(e.contains("the whole sweep") && e.contains("shard 1/2"), "{e}");
        Shard::claim(one, &dir, true).unwrap();
        assert!(!dir.join("runs").exists(), "--force discarded the runs");
        assert_eq!(read(&dir).unwrap(), one);
        Shard::claim(one, &dir, false).unwrap();
        let e = Shard::claim(two, &dir, false).unwrap_err().to_string();
        assert!(e.contains("shard 1/2") && e.contains("not shard 2/2"), "{e}");
        std::fs::write(dir.join(SHARD_FILE), "x\n").unwrap();
        assert!(read(&dir).unwrap_err().to_string().contains("shard.txt"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
