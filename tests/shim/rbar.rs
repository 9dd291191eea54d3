// rbar.rs -- Rust's std::sync::Barrier under the shim (issue #4). Rust's std
// Mutex, Condvar and Barrier wait with raw futex system calls (no pthread
// call), so each waiting thread holds its kernel thread asleep in the
// kernel; a trial's 8 threads hung on 1 and 2 VPs. 8 threads, 100 rounds;
// after each round every thread checks that all 8 arrived.
// Built only when configure finds rustc; run by run-compare.sh as the
// plain POSIX programs are (same output natively and under the shim).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

extern "C" {
    fn alarm(seconds: u32) -> u32;
}

const THREADS: usize = 8;
const ROUNDS: usize = 100;

fn main() {
    // A hang becomes a death by SIGALRM, as check.h's watchdog does.
    unsafe {
        alarm(60);
    }
    println!("== rbar");
    let b = Arc::new(Barrier::new(THREADS));
    let arrived: Arc<Vec<AtomicUsize>> = Arc::new((0..ROUNDS).map(|_| AtomicUsize::new(0)).collect());
    let early = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..THREADS)
        .map(|_| {
            let (b, arrived, early) = (b.clone(), arrived.clone(), early.clone());
            thread::spawn(move || {
                for r in 0..ROUNDS {
                    arrived[r].fetch_add(1, Ordering::SeqCst);
                    b.wait();
                    if arrived[r].load(Ordering::SeqCst) != THREADS {
                        early.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    let mut joined = 0;
    for h in hs {
        if h.join().is_ok() {
            joined += 1;
        }
    }
    let complete = arrived.iter().filter(|a| a.load(Ordering::SeqCst) == THREADS).count();
    let early = early.load(Ordering::SeqCst);
    println!("{} threads joined, {} of {} rounds complete, {} early leaves", joined, complete, ROUNDS, early);
    let ok = joined == THREADS && complete == ROUNDS && early == 0;
    if !ok {
        println!("FAIL rbar: a round lost a thread or let one through early");
    }
    println!("== rbar: {}", if ok { "ok" } else { "FAILED" });
    std::process::exit(if ok { 0 } else { 1 });
}
