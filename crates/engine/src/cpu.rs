//! Where cores idle: this process's CPU time, sampled while a statement runs, so that a user sees
//! which statement is serial (CPU seconds against wall seconds, and cores busy over time) before
//! adding machines. On a cluster the work runs on the executors, so a client measures nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Samples kept per statement: past this, neighbours merge and the interval doubles, so an
/// hour-long statement's series stays as short as a minute-long one's.
const MAX_SAMPLES: usize = 120;

/// The first sampling interval.
const FIRST_INTERVAL: Duration = Duration::from_millis(100);

/// User plus system CPU seconds this process has used, all threads together.
fn process_cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        // SAFETY: getrusage writes one rusage struct, which is plain data, and reads nothing else.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
            return None;
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Some(secs(usage.ru_utime) + secs(usage.ru_stime))
    }
    #[cfg(not(unix))]
    None
}

/// How a statement used the CPU.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CpuUse {
    /// CPU seconds (user and system) this process spent while the statement ran.
    pub cpu_seconds: f64,
    /// Cores busy on average: CPU seconds over wall seconds.
    pub cores_busy: f64,
    /// Seconds each of `busy` covers.
    pub sample_seconds: f64,
    /// Cores busy in each interval from the statement's start, the last one partial.
    pub busy: Vec<f32>,
}

/// Samples the process's CPU time in the background until [`CpuWatch::finish`].
pub struct CpuWatch {
    started: Instant,
    cpu_at_start: f64,
    series: Arc<Mutex<Series>>,
    sampler: tokio::task::JoinHandle<()>,
}

struct Series {
    interval: Duration,
    busy: Vec<f32>,
    /// CPU seconds and instant of the last sample (the start, before the first).
    last: (f64, Instant),
}

impl Series {
    fn sample(&mut self, cpu: f64, at: Instant) {
        let (cpu0, at0) = self.last;
        let wall = at.duration_since(at0).as_secs_f64().max(1e-6);
        self.busy.push(((cpu - cpu0) / wall) as f32);
        self.last = (cpu, at);
        if self.busy.len() >= MAX_SAMPLES {
            self.busy = self.busy.chunks(2).map(|p| p.iter().sum::<f32>() / p.len() as f32).collect();
            self.interval *= 2;
        }
    }
}

impl CpuWatch {
    /// Starts sampling on the current tokio runtime; `None` where CPU time cannot be read.
    pub fn start() -> Option<Self> {
        let (started, cpu_at_start) = (Instant::now(), process_cpu_seconds()?);
        let series = Arc::new(Mutex::new(Series { interval: FIRST_INTERVAL, busy: Vec::new(), last: (cpu_at_start, started) }));
        let s = Arc::clone(&series);
        let sampler = tokio::spawn(async move {
            loop {
                let interval = s.lock().unwrap_or_else(|p| p.into_inner()).interval;
                tokio::time::sleep(interval).await;
                let Some(cpu) = process_cpu_seconds() else { return };
                s.lock().unwrap_or_else(|p| p.into_inner()).sample(cpu, Instant::now());
            }
        });
        Some(Self { started, cpu_at_start, series, sampler })
    }

    /// Stops sampling: the statement's CPU use, with the last partial interval.
    pub fn finish(self) -> Option<CpuUse> {
        self.sampler.abort();
        let (now, cpu) = (Instant::now(), process_cpu_seconds()?);
        let wall = now.duration_since(self.started).as_secs_f64().max(1e-6);
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        if now.duration_since(series.last.1) >= Duration::from_millis(10) {
            series.sample(cpu, now);
        }
        let cpu_seconds = (cpu - self.cpu_at_start).max(0.0);
        Some(CpuUse { cpu_seconds, cores_busy: cpu_seconds / wall, sample_seconds: series.interval.as_secs_f64(), busy: std::mem::take(&mut series.busy) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_series_halves_and_keeps_its_mean() {
        let (mut at, mut cpu) = (Instant::now(), 0.0);
        let mut s = Series { interval: FIRST_INTERVAL, busy: Vec::new(), last: (cpu, at) };
        // One core busy for 150 samples, then two for 150, each sample one interval apart.
        for i in 0..300 {
            let cores = if i < 150 { 1.0 } else { 2.0 };
            at += s.interval;
            cpu += cores * s.interval.as_secs_f64();
            s.sample(cpu, at);
        }
        assert!(s.busy.len() < MAX_SAMPLES && s.interval > FIRST_INTERVAL, "{} samples of {:?}", s.busy.len(), s.interval);
        assert!((s.busy[0] - 1.0).abs() < 1e-3 && (s.busy[s.busy.len() - 1] - 2.0).abs() < 1e-3, "{:?}", s.busy);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_busy_thread_shows_as_about_one_core() {
        let watch = CpuWatch::start().expect("getrusage");
        let spin = std::thread::spawn(|| {
            let until = Instant::now() + Duration::from_millis(400);
            let mut x = 0u64;
            while Instant::now() < until {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            x
        });
        std::hint::black_box(spin.join().unwrap());
        let used = watch.finish().unwrap();
        // At least the spinning thread's 0.4 s: the other tests of this process may add theirs.
        assert!(used.cpu_seconds > 0.3 && used.cores_busy > 0.6, "{used:?}");
        assert!(!used.busy.is_empty() && used.busy.iter().any(|b| *b > 0.5), "{used:?}");
    }
}
