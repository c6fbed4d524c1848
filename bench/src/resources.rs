//! What a scenario costs the measuring process: CPU time and resident memory, read from the
//! kernel (`getrusage`, `/proc`).

use std::time::Duration;

/// This process's resource usage so far (every thread), or `None` if it cannot be read.
fn usage() -> Option<libc::rusage> {
    // SAFETY: getrusage only writes into the zeroed struct we pass it.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        (libc::getrusage(libc::RUSAGE_SELF, &mut usage) == 0).then_some(usage)
    }
}

/// CPU time (user + system) of every thread of this process so far.
pub fn process_cpu() -> Duration {
    usage().map_or(Duration::ZERO, |u| {
        timeval(u.ru_utime) + timeval(u.ru_stime)
    })
}

/// Context switches (voluntary: a thread waited; involuntary: it was preempted) of every
/// thread of this process so far: the wake-ups an operation costs.
pub fn process_ctx_switches() -> u64 {
    usage().map_or(0, |u| (u.ru_nvcsw.max(0) + u.ru_nivcsw.max(0)) as u64)
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

/// CPU time (user + system) of another process so far, from `/proc/<pid>/stat` (clock-tick
/// resolution, 10 ms on most systems). `None` when it cannot be read.
pub fn child_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// Peak resident memory of this process in bytes (`VmHWM`).
pub fn peak_rss() -> Option<u64> {
    status_kib("self", "VmHWM:").map(|kib| kib * 1024)
}

/// Current resident memory of this process in bytes (`VmRSS`).
pub fn current_rss() -> Option<u64> {
    status_kib("self", "VmRSS:").map(|kib| kib * 1024)
}

/// Peak resident memory of another process in bytes.
pub fn child_peak_rss(pid: u32) -> Option<u64> {
    status_kib(&pid.to_string(), "VmHWM:").map(|kib| kib * 1024)
}

fn status_kib(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.get(field.len()..)?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_this_process_are_readable_and_consistent() {
        let before = process_cpu();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu() > before);
        let rss = current_rss().expect("VmRSS");
        let peak = peak_rss().expect("VmHWM");
        assert!(rss > 0 && peak >= rss / 2, "rss {rss} peak {peak}");
        let own = child_cpu(std::process::id()).expect("own /proc stat");
        assert!(own <= process_cpu() + Duration::from_millis(100));
        assert_eq!(child_cpu(u32::MAX), None);
    }
}
