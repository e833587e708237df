//! `coordsim real calibrate`: fits the time model (docs/time.md) to the real services on this
//! machine, and shows the fit beside the real figures.
//!
//! For each service it runs two hundred-request workloads on real clusters through the real
//! runner: a queue lock (one wakeup per release: latency) and a herd (every waiter retries on
//! every release: a burst, so throughput). Then it derives the profile step by step, each step
//! from its own measurement, starting from the built-in profile's shapes:
//! 1. **links**: the shape of one way is half a resource write's round trip (a plain TCP
//!    exchange with a server that does almost nothing), quantile by quantile, scaled by
//!    bisection until the simulated resource write's median is the real one;
//! 2. **fsync**: from the servers' own counters at the end of the runs (etcd's
//!    `etcd_disk_wal_fsync_duration_seconds` histogram, read as quantiles by linear
//!    interpolation within its buckets; ZooKeeper's `mntr`, which gives only the mean and the
//!    maximum, shaped as an exponential distribution of that mean capped at the maximum);
//! 3. **overhead** (latency that holds no CPU): one factor, by bisection, so that the queue
//!    lock's simulated median unlock (a write through consensus) is the real one;
//! 4. **CPU** (request, read, write, lease and apply costs, which queue): one factor, by
//!    bisection, so that the herd's simulated drain (first grant to last) is the real one.
//!    Steps 3 and 4 are done twice, each after the other.
//!
//! Handoffs, the queue lock's drain, keepalives, lock latency and write throughput are not
//! fitted: they are the check, printed beside the real figures, with two workloads of their
//! own: one client alone on the queue lock ([`uncontended`]: acquire and release latency) and
//! writers that put as fast as they are answered ([`write_load`]: write throughput).

use std::collections::BTreeMap;
use std::time::Duration;

use coordsim_checker::metrics::Metrics;
use coordsim_sim::scenario::{Dur, Scenario};
use coordsim_sim::timing::Dist;
use coordsim_sim::timing::TimeModel;

/// The counters of a run's servers that the fit reads.
#[derive(Clone, Debug, PartialEq)]
pub enum FsyncCounters {
    /// etcd: cumulative bucket counts by upper bound in seconds, summed over the servers.
    Histogram(Vec<(f64, u64)>),
    /// ZooKeeper: number of syncs, their total and their maximum (ms, whole).
    MeanMax { count: u64, sum_ms: u64, max_ms: u64 },
}

/// The fsync counters in a run's `server-metrics.txt` (`# <server>` then that server's text).
pub fn fsync_counters(text: &str) -> Option<FsyncCounters> {
    if text.contains("etcd_disk_wal_fsync_duration_seconds_bucket") {
        let mut buckets: BTreeMap<u64, (f64, u64)> = BTreeMap::new();
        for line in text.lines().filter(|l| l.starts_with("etcd_disk_wal_fsync_duration_seconds_bucket")) {
            let le = line.split("le=\"").nth(1)?.split('"').next()?;
            let count: u64 = line.rsplit(' ').next()?.trim().parse().ok()?;
            let bound: f64 = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
            // Bounds are keyed by their µs so they sort and add up across servers.
            let key = if bound.is_finite() { (bound * 1e6).round() as u64 } else { u64::MAX };
            let entry = buckets.entry(key).or_insert((bound, 0));
            entry.1 += count;
        }
        return (!buckets.is_empty()).then(|| FsyncCounters::Histogram(buckets.into_values().collect()));
    }
    let (mut count, mut sum_ms, mut max_ms, mut found) = (0, 0, 0, false);
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(name), Some(value)) = (fields.next(), fields.next()) else { continue };
        let Ok(value) = value.parse::<f64>() else { continue };
        match name {
            "zk_cnt_fsynctime" => (count, found) = (count + value as u64, true),
            "zk_sum_fsynctime" => sum_ms += value as u64,
            "zk_max_fsynctime" => max_ms = max_ms.max(value as u64),
            _ => {}
        }
    }
    (found && count > 0).then_some(FsyncCounters::MeanMax { count, sum_ms, max_ms })
}

fn from_s(seconds: f64) -> Duration {
    Duration::from_nanos((seconds * 1e9).round().max(0.0) as u64)
}

/// The fsync distribution the counters describe (see the module's docs for how).
pub fn fsync_dist(counters: &FsyncCounters) -> Result<Dist, String> {
    match counters {
        FsyncCounters::Histogram(buckets) => {
            let total = buckets.iter().map(|b| b.1).max().unwrap_or(0);
            if total == 0 {
                return Err("no fsync was counted".into());
            }
            let at = |share: f64| {
                let wanted = share * total as f64;
                let mut lower = (0.0, 0u64);
                for &(bound, cumulative) in buckets {
                    if cumulative as f64 >= wanted && bound.is_finite() {
                        let within = (wanted - lower.1 as f64) / (cumulative - lower.1).max(1) as f64;
                        return from_s(lower.0 + (bound - lower.0) * within);
                    }
                    if bound.is_finite() {
                        lower = (bound, cumulative);
                    }
                }
                from_s(lower.0)
            };
            let max = buckets.iter().find(|b| b.1 == total && b.0.is_finite()).map_or(at(1.0), |b| from_s(b.0));
            quantiles(at, max)
        }
        FsyncCounters::MeanMax { count, sum_ms, max_ms } => {
            let mean = *sum_ms as f64 / *count as f64 / 1000.0;
            let max = from_s(*max_ms as f64 / 1000.0).max(from_s(mean));
            // An exponential distribution of that mean: its quantile q is -mean ln(1 - q).
            quantiles(|q| from_s(-mean * (1.0 - q).ln()).min(max), max)
        }
    }
}

/// The distribution through `at`'s p1 (as the minimum), p50, p90, p99 and p99.9, and `max`. The
/// p99.9 point matters: without it the rarest syncs (one in thousands may take a bucket of
/// 128-256 ms) spread evenly over the top 1 % and make that percent ten times too slow.
fn quantiles(at: impl Fn(f64) -> Duration, max: Duration) -> Result<Dist, String> {
    let mut points: Vec<(f64, Duration)> = [0.01, 0.5, 0.9, 0.99, 0.999].iter().map(|q| (*q, at(*q))).collect();
    points[0].0 = 0.0;
    points.push((1.0, max));
    Dist::from_quantiles(&points)
}

/// One way on a link: half of each quantile of a resource write's round trip, less what the
/// profile's resource spends on the write.
pub fn link_dist(write: &coordsim_checker::metrics::Spread, resource_cost: Duration) -> Result<Dist, String> {
    let half = |us: u64| Duration::from_micros(us).saturating_sub(resource_cost) / 2;
    let p50 = half(write.p50_us);
    Dist::from_quantiles(&[
        (0.0, p50 / 4),
        (0.5, p50),
        (0.9, half(write.p90_us).max(p50)),
        (0.99, half(write.p99_us).max(p50)),
        (1.0, half(write.max_us).max(p50)),
    ])
}

/// The shape the request overhead is fitted from: a fixed one, so that a fit does not start
/// from the last fit's (which, scaled down twice, had become zero on ZooKeeper's profile and
/// could not be scaled up again).
pub fn overhead_shape() -> Dist {
    let us = Duration::from_micros;
    Dist::from_quantiles(&[(0.0, us(0)), (0.5, us(200)), (0.9, us(400)), (0.99, us(800)), (1.0, us(1600))])
        .expect("a valid shape")
}

/// `base` with its request overhead [`overhead_shape`] multiplied by `factor`.
pub fn with_overhead_scale(base: &TimeModel, factor: f64) -> TimeModel {
    let mut model = base.clone();
    model.server.overhead = Some(overhead_shape().scaled(factor));
    model
}

/// `base` with every link's latency multiplied by `factor`.
pub fn with_link_scale(base: &TimeModel, factor: f64) -> TimeModel {
    let mut model = base.clone();
    model.network.latency = model.network.latency.scaled(factor);
    if let Some(peer) = &mut model.network.peer {
        *peer = peer.scaled(factor);
    }
    model
}

/// `base` with its request, read, write, lease and apply costs multiplied by `factor`.
pub fn with_cpu_scale(base: &TimeModel, factor: f64) -> TimeModel {
    let mut model = base.clone();
    let server = &mut model.server;
    server.request = server.request.scaled(factor);
    for dist in [&mut server.read, &mut server.write, &mut server.lease].into_iter().flatten() {
        *dist = dist.scaled(factor);
    }
    server.apply = server.apply.scaled(factor);
    model
}

/// `base` with the costs on a write's own path multiplied by `factor`: the write request's
/// (its `write` cost, or `request` where it has none) and each entry's apply. Reads, leases and
/// other requests keep theirs: the herd's getChildren and transactions, which the CPU step
/// fits, and the writers' puts, which this one fits, load a server differently.
pub fn with_write_scale(base: &TimeModel, factor: f64) -> TimeModel {
    let mut model = base.clone();
    let server = &mut model.server;
    let write = server.write.clone().unwrap_or_else(|| server.request.clone());
    server.write = Some(write.scaled(factor));
    server.apply = server.apply.scaled(factor);
    model
}

/// The factor in `low..high` at which `measure(factor)` (rising with it) meets `target`, by
/// bisection on a log scale, `steps` times.
pub fn bisect(mut low: f64, mut high: f64, steps: usize, target: f64, mut measure: impl FnMut(f64) -> f64) -> f64 {
    for _ in 0..steps {
        let mid = (low * high).sqrt();
        if measure(mid) < target {
            low = mid;
        } else {
            high = mid;
        }
    }
    (low * high).sqrt()
}

/// `model` with every distribution rounded to the microsecond.
pub fn rounded(model: &TimeModel) -> TimeModel {
    let mut model = model.clone();
    let network = &mut model.network;
    network.latency = network.latency.rounded_to_us();
    if let Some(peer) = &mut network.peer {
        *peer = peer.rounded_to_us();
    }
    let server = &mut model.server;
    for dist in [&mut server.request, &mut server.peer, &mut server.apply, &mut server.fsync] {
        *dist = dist.rounded_to_us();
    }
    for dist in [&mut server.read, &mut server.write, &mut server.lease, &mut server.overhead].into_iter().flatten() {
        *dist = dist.rounded_to_us();
    }
    model.resource.write = model.resource.write.rounded_to_us();
    model
}

/// A profile file: a heading that says how it was made, then the model.
pub fn profile_file(model: &TimeModel, date: &str) -> Result<String, String> {
    let body = toml::to_string(&rounded(model)).map_err(|e| e.to_string())?;
    Ok(format!(
        "# Written by `coordsim real calibrate` on {date} (docs/time.md says how each figure is fitted);\n\
         # `source` says from which runs. Quantiles per distribution: min, p50, p90, p99, max.\n{body}"
    ))
}

/// The figures a calibration compares, from a run's metrics (µs or per second; `None`: the run
/// has none).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub resource_write_us: Option<u64>,
    pub keepalive_us: Option<u64>,
    pub unlock_us: Option<u64>,
    pub lock_us: Option<u64>,
    pub handoff_us: Option<u64>,
    pub drain_us: Option<u64>,
    /// The key-value workload's puts: acknowledged per second, and their median latency.
    pub puts_per_s: Option<u64>,
    pub put_us: Option<u64>,
}

/// What a figure counts: a duration (µs) or a rate (per second).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Us,
    PerS,
}

impl Figures {
    pub fn of(metrics: &Metrics) -> Figures {
        let p50 = |kind: &str| metrics.requests.get(kind).map(|r| r.ok.p50_us);
        let lock = metrics.busiest_lock();
        Figures {
            resource_write_us: p50("write"),
            keepalive_us: p50("lease_keep_alive"),
            unlock_us: p50("unlock"),
            lock_us: p50("lock"),
            handoff_us: lock.and_then(|l| l.handoff.as_ref()).map(|h| h.p50_us),
            drain_us: lock.map(|l| l.drain_us),
            puts_per_s: metrics.requests.get("put").map(|r| r.per_s.round() as u64),
            put_us: p50("put"),
        }
    }

    /// (name, value, unit) rows, in table order.
    pub fn rows(&self) -> [(&'static str, Option<u64>, Unit); 8] {
        [
            ("resource write (fits the links)", self.resource_write_us, Unit::Us),
            ("unlock (fits the overhead, queue lock)", self.unlock_us, Unit::Us),
            ("drain, first grant to last (fits the CPU, herd)", self.drain_us, Unit::Us),
            ("handoff", self.handoff_us, Unit::Us),
            ("keepalive", self.keepalive_us, Unit::Us),
            ("lock, queueing included", self.lock_us, Unit::Us),
            ("puts acknowledged per second", self.puts_per_s, Unit::PerS),
            ("put", self.put_us, Unit::Us),
        ]
    }
}

/// The write-throughput check: [`WRITERS`] clients that put to 100 keys as fast as their
/// replies come back (a put every 0.5-1.5 ms after the last reply) for 10 s, on the service's
/// own API (etcd: put; ZooKeeper: setData on znodes each writer first creates). Its figure is
/// the puts acknowledged per second ("etcd ~10k writes/s on 3 nodes, ZooKeeper ~2k on 5": with
/// hundreds of clients on separate machines; here the writers share the servers' two cores).
pub fn write_load(zookeeper: bool) -> Scenario {
    let (name, api) =
        if zookeeper { ("calibrate-writes-zookeeper", "zookeeper") } else { ("calibrate-writes-etcd", "etcd") };
    let text = format!(
        "name = \"{name}\"\nsummary = \"{WRITERS} writers put as fast as their replies come back\"\n\
         duration = \"10s\"\n[cluster]\nservers = 3\n[kv]\napi = \"{api}\"\nkeys = 100\ninterval = \"1ms\"\n\
         [clients]\ncount = {WRITERS}\nstart = \"500ms\"\n"
    );
    let scenario: Scenario = toml::from_str(&text).expect("the write load parses");
    scenario.validate().expect("the write load is valid");
    scenario
}

/// Writers of [`write_load`].
pub const WRITERS: usize = 8;

/// `queue` with one client that takes the lock, holds it, releases it and asks again 100 ms
/// later for the whole run: its `lock` latency is the uncontended acquire, its `unlock` the
/// release with nobody waiting.
pub fn uncontended(queue: &Scenario) -> Scenario {
    let mut alone = queue.clone();
    alone.name = format!("{}-uncontended", queue.name);
    alone.clients.count = 1;
    alone.clients.think = Dur(Duration::from_millis(100));
    alone
}

/// `1.23 ms`, `5.74 s`.
pub fn show_us(us: u64) -> String {
    if us >= 1_000_000 { format!("{:.2} s", us as f64 / 1e6) } else { format!("{:.2} ms", us as f64 / 1e3) }
}

fn show(value: u64, unit: Unit) -> String {
    match unit {
        Unit::Us => show_us(value),
        Unit::PerS => format!("{value}/s"),
    }
}

/// "min–max" of several runs' figure, or the one value; "-" for none.
pub fn range(values: &[u64], unit: Unit) -> String {
    match (values.iter().min(), values.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => show(*lo, unit),
        (Some(lo), Some(hi)) => format!("{}–{}", show(*lo, unit), show(*hi, unit)),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The write path's factor moves the write request's cost (taken from `request` where the
    /// profile has none) and each entry's apply, and nothing a read, a lease or another request
    /// pays; the overhead's factor is on a fixed shape, whatever the profile had.
    #[test]
    fn the_write_path_and_overhead_factors_move_only_their_costs() {
        let base = coordsim_sim::timing::profile("zookeeper-3.8-loopback").unwrap();
        let mut no_write = base.clone();
        no_write.server.write = None;
        no_write.server.overhead = Some(Dist::fixed(Duration::ZERO));
        let scaled = with_write_scale(&no_write, 0.5);
        assert_eq!(scaled.server.write, Some(base.server.request.scaled(0.5)));
        assert_eq!(scaled.server.apply, base.server.apply.scaled(0.5));
        assert_eq!(
            (&scaled.server.request, &scaled.server.read, &scaled.server.lease, &scaled.server.peer),
            (&base.server.request, &base.server.read, &base.server.lease, &base.server.peer)
        );
        let overhead = with_overhead_scale(&no_write, 2.0).server.overhead.unwrap();
        assert_eq!(overhead, overhead_shape().scaled(2.0));
        assert_eq!(overhead.median(), Duration::from_micros(400));
    }

    const ETCD: &str = "# s1\netcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 86\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.002\"} 92\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.004\"} 95\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.008\"} 98\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.016\"} 100\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.032\"} 100\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} 100\n\
        etcd_disk_wal_fsync_duration_seconds_sum 0.1\netcd_disk_wal_fsync_duration_seconds_count 100\n\
        # s2\netcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 86\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.002\"} 92\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.004\"} 95\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.008\"} 98\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.016\"} 100\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.032\"} 100\n\
        etcd_disk_wal_fsync_duration_seconds_bucket{le=\"+Inf\"} 100\n";

    #[test]
    fn etcds_histogram_is_read_as_quantiles_over_every_server() {
        let counters = fsync_counters(ETCD).unwrap();
        let FsyncCounters::Histogram(buckets) = &counters else { panic!("{counters:?}") };
        assert_eq!(buckets.first(), Some(&(0.001, 172)), "two servers' counts added");
        let dist = fsync_dist(&counters).unwrap();
        // 50 % of 200 is in the first bucket (172 under 1 ms): 100/172 of the way to 1 ms.
        assert_eq!(dist.median(), Duration::from_nanos(581_395));
        // 99 %: the 198th sync, in 8-16 ms (196 before it): 2/4 of the way.
        assert_eq!(dist.at(0.99), Duration::from_millis(12));
        assert_eq!(dist.max(), Duration::from_millis(16), "the lowest bound holding every sync");
        // 99.9 %: the 199.8th sync, 3.8/4 of the way through 8-16 ms.
        assert_eq!(dist.at(0.999), Duration::from_micros(15_600));
    }

    #[test]
    fn zookeepers_mean_and_max_give_an_exponential_capped_at_the_max() {
        let text = "# s1\nzk_avg_fsynctime\t1.2353\nzk_max_fsynctime\t11\nzk_cnt_fsynctime\t170\nzk_sum_fsynctime\t210\n\
                    # s2\nzk_max_fsynctime\t5\nzk_cnt_fsynctime\t30\nzk_sum_fsynctime\t40\n";
        let counters = fsync_counters(text).unwrap();
        assert_eq!(counters, FsyncCounters::MeanMax { count: 200, sum_ms: 250, max_ms: 11 });
        let dist = fsync_dist(&counters).unwrap();
        let mean = 1.25e-3;
        assert_eq!(dist.median(), from_s(mean * std::f64::consts::LN_2));
        assert_eq!(dist.at(0.99), from_s(mean * 100f64.ln()));
        assert_eq!(dist.max(), Duration::from_millis(11));
        assert_eq!(fsync_counters("# s1\nzk_server_state\tleader\n"), None);
    }

    #[test]
    fn a_link_is_half_a_round_trip_and_bisection_finds_a_factor() {
        let write =
            coordsim_checker::metrics::Spread { count: 9, p50_us: 270, p90_us: 600, p99_us: 2300, max_us: 2300 };
        let link = link_dist(&write, Duration::from_micros(20)).unwrap();
        assert_eq!(link.median(), Duration::from_micros(125));
        assert_eq!(link.max(), Duration::from_micros(1140));
        let factor = bisect(0.01, 100.0, 40, 3.0, |k| 2.0 * k);
        assert!((factor - 1.5).abs() < 1e-6, "{factor}");
    }

    #[test]
    fn the_write_load_puts_on_each_services_api_and_rates_show_per_second() {
        for zookeeper in [false, true] {
            let load = write_load(zookeeper);
            let kv = load.kv.as_ref().expect("a key-value workload");
            assert_eq!(kv.api == coordsim_sim::scenario::KvApi::Zookeeper, zookeeper);
            assert_eq!((kv.reads, kv.cas, load.clients.count), (0.0, 0.0, WRITERS));
        }
        assert_eq!(range(&[830, 940], Unit::PerS), "830/s–940/s");
        assert_eq!(range(&[4_400], Unit::Us), "4.40 ms");
        assert_eq!(range(&[], Unit::Us), "-");
    }
}
