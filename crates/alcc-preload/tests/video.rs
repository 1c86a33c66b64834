//! The video case (issue 12 item 3): Debian's nginx, unmodified, under `libalcc_preload.so`
//! serves an HLS stream (a playlist and MPEG-TS segments, fetched one after another over a
//! keep-alive connection) and a progressive MP4 (`+faststart`: the index first, then the
//! media in one sequential read) to Debian's `ffmpeg` as the client. The media are made here
//! with ffmpeg's lavfi test sources (`testsrc2` and a sine tone, H.264 and AAC), nothing is
//! downloaded. ffmpeg decodes what it read through the shim into one MD5 per decoded frame
//! (`-f framemd5`); the list must equal the list of the same media read from the disk, so every
//! frame arrived and decoded identically. The controller is a fixed pacing rate, so the
//! time each read takes shows the connection was governed.

mod common;

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::{free_port, nginx, start_nginx, Scratch, NGINX_MISSING};

/// The pacing rate of the test, Mbit/s (`ALCC_CC=fixed:rate=4`).
const RATE_MBPS: f64 = 4.0;

/// Makes 8 s of 320x240 video at 25 frames/s with a 440 Hz tone into `www`: an HLS stream in
/// `www/hls` (2 s segments, a VOD playlist) and a progressive MP4 `www/video.mp4`.
fn make_media(www: &Path) {
    std::fs::create_dir_all(www.join("hls")).unwrap();
    let sources = [
        "-nostdin",
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x240:rate=25",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=48000",
        "-t",
        "8",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-g",
        "50",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "aac",
        "-b:a",
        "64k",
    ];
    let hls = Command::new("ffmpeg")
        .args(sources)
        .args(["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_segment_filename"])
        .arg(www.join("hls/seg%03d.ts"))
        .arg(www.join("hls/stream.m3u8"))
        .status()
        .expect("ffmpeg runs (scripts/setup.sh installs it)");
    assert!(hls.success(), "ffmpeg could not make the HLS stream: {hls}");
    let mp4 = Command::new("ffmpeg")
        .args(sources)
        .args(["-movflags", "+faststart"])
        .arg(www.join("video.mp4"))
        .status()
        .unwrap();
    assert!(mp4.success(), "ffmpeg could not make the MP4: {mp4}");
}

/// One line per decoded frame of every stream of `input` (a path or a URL), with its MD5; and
/// how long ffmpeg took.
fn frame_md5s(input: &str) -> (Vec<String>, Duration) {
    let t0 = Instant::now();
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-rw_timeout", "30000000", "-i", input])
        .args(["-map", "0", "-f", "framemd5", "-"])
        .output()
        .expect("ffmpeg runs (scripts/setup.sh installs it)");
    let took = t0.elapsed();
    assert!(
        out.status.success(),
        "ffmpeg -i {input}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    (text.lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect(), took)
}

/// Bytes of the files in `dir` (not recursive).
fn bytes_in(dir: &Path) -> u64 {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.metadata().map(|m| m.len()).unwrap_or(0)).sum()
}

#[test]
fn ffmpeg_reads_hls_and_mp4_from_nginx_under_the_shim_frame_for_frame() {
    let Some(_env) = alcc_testenv::needs().program("ffmpeg").that(nginx().is_some(), NGINX_MISSING).check()
    else {
        return;
    };
    let dir = Scratch::new("video");
    let www = dir.0.join("www");
    make_media(&www);
    let log = dir.0.join("alcc.log");
    let port = free_port();
    let rate = format!("fixed:rate={RATE_MBPS}");
    let _server = start_nginx(&dir.0, port, &[("ALCC_CC", &rate), ("ALCC_LOG", log.to_str().unwrap())]);
    // ffmpeg's HLS reader fetches the next segment on a second connection while it reads the
    // current one (its `http_multiple`, on by default with HTTP/1.1 servers): two flows, each
    // paced at the rate. The MP4 is one sequential read on one connection.
    let media = [
        ("hls/stream.m3u8", bytes_in(&www.join("hls")), 2.0),
        ("video.mp4", std::fs::metadata(www.join("video.mp4")).unwrap().len(), 1.0),
    ];
    for (path, bytes, flows) in media {
        let (local, _) = frame_md5s(&www.join(path).display().to_string());
        let (remote, took) = frame_md5s(&format!("http://127.0.0.1:{port}/{path}"));
        // 8 s at 25 frames/s, and the tone's AAC frames (1024 samples at 48 kHz).
        assert!(local.len() >= 200 + 375, "{path}: {} frames decoded from the disk", local.len());
        assert!(
            remote == local,
            "{path}: {} frames through the shim, {} from the disk, first difference at frame {:?}",
            remote.len(),
            local.len(),
            remote.iter().zip(&local).position(|(a, b)| a != b)
        );
        let paced = Duration::from_secs_f64(bytes as f64 * 8.0 / (flows * RATE_MBPS * 1e6));
        eprintln!(
            "{path}: {} frames identical, {bytes} bytes in {took:?} ({paced:?} at the rate)",
            remote.len()
        );
        assert!(took > paced.mul_f64(0.8), "{path}: {bytes} bytes in {took:?}: not paced");
    }
    // Every connection was governed (the pacing above says the bytes went through a flow:
    // loopback TCP alone takes milliseconds) and let go when nginx closed it. The figures of
    // a close line are the flow's last published snapshot, which may predate the response.
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let count = |what: &str| text.lines().filter(|l| l.contains(what)).count();
        let (accepts, closes) = (count(" accept fd="), count(" close fd="));
        // The playlist, the segments (two connections), the MP4, and the start-up probe.
        if accepts >= 4 && closes == accepts {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{accepts} governed accepts, {closes} closes: {text}"
        );
        thread::sleep(Duration::from_millis(100));
    }
}
