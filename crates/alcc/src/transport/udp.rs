//! UDP mode's write path, every datagram behind the flow's connection id (the one its client
//! chose): the `Hello` naming the controller (three times: nothing is retransmitted), then one data datagram per chunk of at most
//! [`UDP_PAYLOAD`](crate::wire::udp::UDP_PAYLOAD) bytes, and at the end, once nothing is in
//! flight, the `Close` datagrams with the count of bytes sent, until the receiver answers. [`UdpFeedback`] reads the
//! receiver's per-datagram ACKs.

use std::io;
use std::os::fd::RawFd;

use crate::feedback::udp::UdpFeedback;
use crate::sent_chunks::SentChunks;
use crate::sys;
use crate::transport::OutChunk;
use crate::wire::frame::{encode_data_header, Envelope};
use crate::wire::udp::{encode_datagram, ConnectionId};
use crate::wire::{DataHeader, Frame};
use alcc_cc::Time;

/// How many times the datagrams that carry no data (`Hello`, `Close`) are sent.
const REPEATS: usize = 3;

/// UDP mode: one data datagram per chunk on a connected UDP socket.
#[derive(Debug)]
pub(crate) struct UdpTransport {
    /// The flow's connection id.
    id: ConnectionId,
    /// The `Close` went out at least once.
    close_started: bool,
    /// The encoded `Hello`, until it is sent.
    hello: Option<Vec<u8>>,
    /// The datagram being built.
    datagram: Vec<u8>,
    /// The receiver's ACKs and reports.
    pub feedback: UdpFeedback,
}

fn encoding_error(e: crate::wire::WireError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e)
}

impl UdpTransport {
    /// A transport of flow `id` whose `Hello` announces `spec`.
    pub fn new(spec: &str, id: ConnectionId) -> io::Result<UdpTransport> {
        let mut hello = Vec::new();
        encode_datagram(id, &Frame::Hello { spec: spec.trim().to_string() }, &mut hello)
            .map_err(encoding_error)?;
        Ok(UdpTransport {
            id,
            close_started: false,
            hello: Some(hello),
            datagram: Vec::new(),
            feedback: UdpFeedback::new(id),
        })
    }

    /// Sends the `Hello` if it was not sent yet (a datagram the socket refuses is lost, as
    /// the network might lose it).
    pub fn flush(&mut self, fd: RawFd) -> io::Result<bool> {
        if let Some(hello) = self.hello.take() {
            for _ in 0..REPEATS {
                let _ = sys::send_parts(fd, [&hello], false);
            }
        }
        Ok(true)
    }

    /// Sends `chunk` as one data datagram; `None` if the socket buffer is full.
    pub fn send(&mut self, fd: RawFd, chunk: OutChunk<'_>) -> io::Result<Option<usize>> {
        let len = chunk.len();
        let header = DataHeader {
            seq: chunk.seq,
            send_time: chunk.now,
            time_to_next: chunk.hint.time_to_next,
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        self.datagram.clear();
        encode_data_header(Envelope::Datagram(self.id), &header, &mut self.datagram)
            .map_err(encoding_error)?;
        chunk.payload.append_to(&mut self.datagram)?;
        loop {
            match sys::send_parts(fd, [&self.datagram], false) {
                Ok(_) => return Ok(Some(len)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Once every datagram was acknowledged or declared lost, tells the receiver how many
    /// bytes were sent (`Close`, three times, then again every
    /// [`CLOSE_REPEAT`](crate::feedback::udp::CLOSE_REPEAT)) until the receiver answers with
    /// its own `Close`; returns whether it answered. A receiver that stopped reading before
    /// the end, or is gone, never answers: the flow fails after
    /// [`CLOSE_LIMIT`](crate::feedback::udp::CLOSE_LIMIT) of its silence (or at once, on the
    /// ICMP port unreachable that the `Close` draws), so that the sender's close never
    /// reports success for a stream its receiver abandoned.
    pub fn finish(&mut self, fd: RawFd, chunks: &SentChunks, now: Time) -> io::Result<bool> {
        if chunks.bytes_in_flight() > 0 {
            return Ok(false);
        }
        if self.feedback.end_confirmed().is_some() {
            return Ok(true);
        }
        if self.feedback.refused() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "alcc udp: the client went away before it confirmed the end of the stream",
            ));
        }
        if !self.feedback.close_due(now)? {
            return Ok(false);
        }
        let repeats = if self.close_started { 1 } else { REPEATS };
        self.close_started = true;
        let mut close = Vec::new();
        encode_datagram(self.id, &Frame::Close { sent: chunks.written() }, &mut close)
            .map_err(encoding_error)?;
        for _ in 0..repeats {
            // A datagram the socket refuses is lost, as the network might lose it; a refusal
            // (ICMP port unreachable) is judged once the socket was read.
            let _ = sys::send_parts(fd, [&close], false);
        }
        self.feedback.close_sent(now);
        Ok(false)
    }
}
