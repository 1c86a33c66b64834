//! `AlccStream::send_file`: file ranges queued by reference between written bytes, sent by
//! sendfile(2) on a socket the engine owns and read into a buffer on a shared one, over real
//! kernel TCP on loopback.

mod common;

use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::thread;
use std::time::Duration;

use alcc::{AlccStream, Options};
use common::{pattern, read_all, Fnv};

/// How the test takes over the accepted socket.
#[derive(Clone, Copy, Debug)]
enum Takeover {
    /// `AlccStream::from_tcp`: the engine owns the socket (file ranges by sendfile).
    Owned,
    /// `AlccStream::from_shared_fd`: the socket is shared (file ranges read into a buffer).
    Shared,
}

/// A stream under `cc` to a client thread that reads everything; returns both.
fn connected(cc: &str, takeover: Takeover) -> (AlccStream, thread::JoinHandle<io::Result<(u64, u64)>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = thread::spawn(move || read_all(&mut TcpStream::connect(addr)?));
    let (tcp, _) = listener.accept().unwrap();
    let options = Options::with_cc(cc);
    let stream = match takeover {
        Takeover::Owned => AlccStream::from_tcp(tcp, &options).unwrap(),
        Takeover::Shared => AlccStream::from_shared_fd(OwnedFd::from(tcp), &options).unwrap(),
    };
    (stream, client)
}

#[test]
fn file_ranges_and_written_bytes_arrive_intact_and_in_order() {
    let mut content = vec![0u8; 3 << 20];
    pattern(0, &mut content);
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&content).unwrap();
    let mut head = vec![0u8; 1000];
    pattern(1 << 40, &mut head);
    for takeover in [Takeover::Owned, Takeover::Shared] {
        // `fixed` alone takes no timestamps (it needs no RTT samples, nothing bounds it); a
        // window far above loopback's BDP gives the same 256 KiB chunks with them.
        for cc in ["fixed", "fixed:window=10000", "fixed:window=8"] {
            let (mut stream, client) = connected(cc, takeover);
            let mut want = Fnv::default();
            let mut total = 0u64;
            let mut expect = |bytes: &[u8]| {
                want.update(bytes);
                total += bytes.len() as u64;
            };
            stream.write_all(&head).unwrap();
            expect(&head);
            for (offset, len) in [(100u64, 2u64 << 20), (0, 3 << 20), (5, 1), (3 << 20, 0), (12_345, 777_777)]
            {
                let mut left = len;
                while left > 0 {
                    let took = stream.send_file(&file, offset + len - left, left).unwrap();
                    assert!(took > 0 && took <= left);
                    left -= took;
                }
                assert_eq!(stream.send_file(&file, offset, 0).unwrap(), 0);
                expect(&content[offset as usize..(offset + len) as usize]);
                stream.write_all(&head[..77]).unwrap();
                expect(&head[..77]);
            }
            stream.flush().unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while stream.info().bytes_in_flight > 0 && std::time::Instant::now() < deadline {
                thread::sleep(Duration::from_millis(2));
            }
            let info = stream.info();
            stream.close(Some(Duration::from_secs(30))).unwrap();
            let (got, sum) = client.join().unwrap().unwrap();
            assert_eq!((got, sum), (total, want.0), "{takeover:?} {cc}: the bytes differ");
            assert_eq!(info.bytes_acked, total, "{takeover:?} {cc}");
            // Every chunk is acknowledged, and at most one ACK timestamp comes per chunk:
            // sendfile's internal passes inside a long chunk are not stamped.
            eprintln!(
                "{takeover:?} {cc}: {} chunks, {} settled by stamps, {} by TCP_INFO, {} stamps",
                info.chunks_sent, info.stamp_acks, info.info_acks, info.ack_stamps
            );
            assert_eq!(
                info.stamp_acks + info.info_acks + info.losses,
                info.chunks_sent,
                "{takeover:?} {cc}: {info:?}"
            );
            assert!(info.ack_stamps <= info.chunks_sent, "{takeover:?} {cc}: {info:?}");
            // A chunk the socket took whole is acknowledged by its own stamp (the stamp of
            // its last byte). Under the large window the step's last chunk often fills the
            // socket, and a long file chunk's head, sent with stamps off, is then
            // acknowledged by TCP_INFO or the next chunk's stamp instead.
            match cc {
                "fixed" => assert_eq!(info.ack_stamps, 0, "{takeover:?} {cc}: {info:?}"),
                "fixed:window=10000" if matches!(takeover, Takeover::Owned) => {}
                _ => assert!(info.stamp_acks * 10 >= info.chunks_sent * 9, "{takeover:?} {cc}: {info:?}"),
            }
        }
    }
}

#[test]
fn a_range_beyond_the_end_of_its_file_fails_the_flow() {
    let mut content = vec![0u8; 100_000];
    pattern(3, &mut content);
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&content).unwrap();
    for takeover in [Takeover::Owned, Takeover::Shared] {
        let (stream, client) = connected("fixed", takeover);
        assert_eq!(stream.send_file(&file, 1000, 500_000).unwrap(), 500_000);
        let e = stream.close(Some(Duration::from_secs(30))).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{takeover:?}: {e}");
        assert!(e.to_string().contains("shrank"), "{takeover:?}: {e}");
        // The client got at most what the file holds past the offset, then the end.
        if let Ok((got, _)) = client.join().unwrap() {
            assert!(got <= 99_000, "{takeover:?}: {got} bytes");
        }
    }
}
