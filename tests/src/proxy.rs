//! A TCP proxy on loopback that a test can unplug: every connection through it is cut and new
//! ones are refused until it is plugged back, as when a laptop leaves the lab's network. Or
//! silence: nothing goes through any more and nothing is closed, as when a network drops
//! packets.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

pub struct TcpProxy {
    addr: SocketAddr,
    plugged: Arc<AtomicBool>,
    silent: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl TcpProxy {
    /// A proxy on a free loopback port to `upstream`.
    pub fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let plugged = Arc::new(AtomicBool::new(true));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let silent = Arc::new(AtomicBool::new(false));
        let (p, o, s, q) = (plugged.clone(), open.clone(), stop.clone(), silent.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if !p.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                if q.load(Ordering::SeqCst) {
                    // Held open, never answered.
                    o.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut list = o.lock().unwrap_or_else(PoisonError::into_inner);
                for (from, to) in [(&client, &server), (&server, &client)] {
                    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
                        continue;
                    };
                    let quiet = q.clone();
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16 * 1024];
                        while let Ok(n) = from.read(&mut buf) {
                            // Silenced: what arrives is dropped, as by a lossy network.
                            if n == 0
                                || (!quiet.load(Ordering::SeqCst)
                                    && to.write_all(&buf[..n]).is_err())
                            {
                                break;
                            }
                        }
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
                list.extend([client, server]);
            }
        });
        Self {
            addr,
            plugged,
            silent,
            open,
            stop,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Cut every connection and refuse new ones.
    pub fn unplug(&self) {
        self.plugged.store(false, Ordering::SeqCst);
        for s in self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Forward nothing from now on, in either direction, and close nothing.
    pub fn silence(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    pub fn plug(&self) {
        self.plugged.store(true, Ordering::SeqCst);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.unplug();
        // Wake the accept loop so it sees the stop.
        let _ = TcpStream::connect(self.addr);
    }
}
