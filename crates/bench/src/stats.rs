//! Latency figures of a measured window: nearest-rank percentiles and the maximum.

use std::time::Duration;

/// The latency distribution of the requests (or flows) completed in a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub count: usize,
    pub p50: Duration,
    pub p95: Duration,
    pub p99: Duration,
    pub max: Duration,
}

/// Summarizes latencies in any order; `None` when there are none.
pub fn summarize(mut latencies: Vec<Duration>) -> Option<Summary> {
    latencies.sort_unstable();
    let max = *latencies.last()?;
    Some(Summary {
        count: latencies.len(),
        p50: percentile(&latencies, 50),
        p95: percentile(&latencies, 95),
        p99: percentile(&latencies, 99),
        max,
    })
}

/// The nearest-rank percentile of sorted, non-empty values: the smallest value with at
/// least `percent`% of the values at or below it.
fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted
        .get(rank - 1)
        .or(sorted.last())
        .copied()
        .unwrap_or_default()
}

/// Milliseconds with fractions, for the report.
pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: impl IntoIterator<Item = u64>) -> Vec<Duration> {
        values.into_iter().map(Duration::from_millis).collect()
    }

    #[test]
    fn one_to_a_hundred_gives_the_rank_itself() {
        let mut values = ms(1..=100);
        values.reverse();
        let summary = summarize(values).unwrap();
        assert_eq!(summary.count, 100);
        assert_eq!(summary.p50, Duration::from_millis(50));
        assert_eq!(summary.p95, Duration::from_millis(95));
        assert_eq!(summary.p99, Duration::from_millis(99));
        assert_eq!(summary.max, Duration::from_millis(100));
    }

    #[test]
    fn a_rank_between_values_rounds_up_to_the_next_value() {
        // 10 values: p95 is rank ceil(9.5) = 10, p50 rank 5, p99 rank 10.
        let summary = summarize(ms([7, 3, 9, 1, 5, 2, 8, 4, 10, 6])).unwrap();
        assert_eq!(summary.p50, Duration::from_millis(5));
        assert_eq!(summary.p95, Duration::from_millis(10));
        assert_eq!(summary.p99, Duration::from_millis(10));
    }

    #[test]
    fn a_single_value_is_every_percentile() {
        let summary = summarize(ms([42])).unwrap();
        assert_eq!(
            (summary.p50, summary.p99, summary.max),
            (
                Duration::from_millis(42),
                Duration::from_millis(42),
                Duration::from_millis(42)
            )
        );
    }

    #[test]
    fn a_tail_outlier_shows_in_p99_and_max_not_p50() {
        let mut values = ms(std::iter::repeat_n(2, 990));
        values.extend(ms(std::iter::repeat_n(300, 10)));
        let summary = summarize(values).unwrap();
        assert_eq!(summary.p50, Duration::from_millis(2));
        assert_eq!(summary.p95, Duration::from_millis(2));
        assert_eq!(summary.p99, Duration::from_millis(2));
        assert_eq!(summary.max, Duration::from_millis(300));
    }

    #[test]
    fn no_latencies_no_summary() {
        assert_eq!(summarize(Vec::new()), None);
    }

    #[test]
    fn millis_keeps_fractions() {
        assert_eq!(millis(Duration::from_micros(1500)), 1.5);
    }
}
