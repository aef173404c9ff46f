//! A solver run that cannot outlive its deadline: CBC checks its own time limit only between
//! phases (on the largest shared e-graphs it overshot a 10 s limit by minutes) and its
//! preprocessing has crashed the process (a segfault in CglPreProcess). So, on Unix, the solve
//! runs in a forked child process that writes its answer into a pipe; the parent waits until
//! the deadline and then kills the child. A child that crashes or is killed gives no answer,
//! and the caller falls back to its incumbent. Elsewhere the solve runs in-process.
//!
//! The child only runs the closure (CBC is single-threaded here) and leaves with `_exit`, so
//! no destructor or buffered output of the parent runs twice.

use super::graph::Extraction;
use std::time::Instant;

/// Runs `f` and returns its answer, or `None` if it did not answer by `deadline`.
#[cfg(unix)]
pub fn run_bounded(
    deadline: Instant,
    f: impl FnOnce() -> Option<Extraction>,
) -> Option<Extraction> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe writes two descriptors into the array
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return f();
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    // SAFETY: the child runs only `f`, writes to the pipe and leaves with _exit
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        // SAFETY: closing our own descriptors
        unsafe {
            libc::close(read_fd);
            libc::close(write_fd);
        }
        return f();
    }
    if pid == 0 {
        // SAFETY: in the child: write the encoded answer, then leave without cleanup
        unsafe {
            libc::close(read_fd);
            let bytes = encode(&f());
            let mut off = 0;
            while off < bytes.len() {
                let n = libc::write(write_fd, bytes[off..].as_ptr().cast(), bytes.len() - off);
                if n <= 0 {
                    break;
                }
                off += n as usize;
            }
            libc::_exit(0);
        }
    }
    // SAFETY: the parent keeps only the read end
    unsafe { libc::close(write_fd) };
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut complete = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let mut pfd = libc::pollfd {
            fd: read_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if r == 0 {
            continue; // the deadline is checked at the top
        }
        // SAFETY: reading into our buffer
        let n = unsafe { libc::read(read_fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            complete = n == 0;
            break;
        }
        bytes.extend_from_slice(&buf[..n as usize]);
    }
    // SAFETY: ending and reaping our own child; closing our descriptor
    unsafe {
        if !complete {
            libc::kill(pid, libc::SIGKILL);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        libc::close(read_fd);
    }
    if complete {
        decode(&bytes)
    } else {
        None
    }
}

/// Runs `f` in-process (no fork available): the deadline is the solver's own.
#[cfg(not(unix))]
pub fn run_bounded(
    _deadline: Instant,
    f: impl FnOnce() -> Option<Extraction>,
) -> Option<Extraction> {
    f()
}

/// answer byte, optimal byte, bound (NaN: none), number of classes, then each choice (-1: none)
#[cfg_attr(not(unix), allow(dead_code))]
fn encode(ex: &Option<Extraction>) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(ex) = ex else {
        out.push(0);
        return out;
    };
    out.push(1);
    out.push(u8::from(ex.optimal));
    out.extend(ex.bound.unwrap_or(f64::NAN).to_le_bytes());
    out.extend((ex.choice.len() as u64).to_le_bytes());
    for c in &ex.choice {
        out.extend(c.map_or(-1i64, |n| n as i64).to_le_bytes());
    }
    out
}

#[cfg_attr(not(unix), allow(dead_code))]
fn decode(b: &[u8]) -> Option<Extraction> {
    if b.first() != Some(&1) || b.len() < 18 {
        return None;
    }
    let optimal = b[1] == 1;
    let bound = f64::from_le_bytes(b[2..10].try_into().ok()?);
    let len = u64::from_le_bytes(b[10..18].try_into().ok()?) as usize;
    if b.len() != 18 + 8 * len {
        return None;
    }
    let choice = b[18..]
        .chunks_exact(8)
        .map(|c| {
            let v = i64::from_le_bytes(c.try_into().expect("8 bytes"));
            (v >= 0).then_some(v as usize)
        })
        .collect();
    Some(Extraction {
        choice,
        optimal,
        bound: (!bound.is_nan()).then_some(bound),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn answers_round_trip_and_late_or_crashed_children_give_none() {
        let ex = Extraction {
            choice: vec![Some(3), None, Some(0)],
            optimal: true,
            bound: Some(2.5),
        };
        let far = Instant::now() + Duration::from_secs(20);
        assert_eq!(run_bounded(far, || Some(ex.clone())), Some(ex.clone()));
        assert_eq!(run_bounded(far, || None), None);
        #[cfg(unix)]
        {
            let t = Instant::now();
            let late = run_bounded(Instant::now() + Duration::from_millis(200), || {
                std::thread::sleep(Duration::from_secs(30));
                Some(ex.clone())
            });
            assert_eq!(late, None);
            assert!(t.elapsed() < Duration::from_secs(10));
            assert_eq!(
                run_bounded(far, || {
                    // SAFETY: ends this (child) process as a crash would (no core file)
                    unsafe {
                        libc::kill(libc::getpid(), libc::SIGKILL);
                    }
                    Some(ex.clone())
                }),
                None
            );
        }
    }
}
