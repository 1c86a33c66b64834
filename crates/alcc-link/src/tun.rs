//! A TUN device carrying raw IP packets (IFF_TUN | IFF_NO_PI), created inside a namespace.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};

use crate::netns::Netns;
use crate::sys;

/// The name of the emulator's device in each of its namespaces.
pub const DEVICE: &str = "alcc0";

/// The largest packet the devices carry (their MTU).
pub const MTU: usize = 1500;

/// One end of the emulated link: a non-blocking TUN descriptor. The device exists while this
/// value lives (it is not persistent) and disappears with its namespace.
#[derive(Debug)]
pub struct Tun {
    file: File,
}

impl Tun {
    /// Creates the device [`DEVICE`] inside `ns` (on a short-lived thread that enters it).
    pub fn create_in(ns: &Netns) -> io::Result<Tun> {
        let fd = ns.run_in(|| sys::open_tun(DEVICE))??;
        Ok(Tun { file: File::from(fd) })
    }

    /// Reads one packet into `buf`; `WouldBlock` when none is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.file).read(buf)
    }

    /// Writes one packet; the kernel of the device's namespace receives it.
    pub fn send(&self, packet: &[u8]) -> io::Result<usize> {
        (&self.file).write(packet)
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
