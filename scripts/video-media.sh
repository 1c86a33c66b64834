#!/usr/bin/env bash
# Makes the HLS stream that the harness's nginx-hls-* schemes serve (issue 12's video case):
# DIR/hls/stream.m3u8, a VOD playlist, and DIR/hls/segNNN.ts, 4 s MPEG-TS segments of H.264
# 1280x720 at 30 frames/s, 6 Mbit/s (a typical top rendition of a 720p ladder) with a 440 Hz
# AAC tone at 128 kbit/s. Everything comes from ffmpeg's lavfi test sources (testsrc2 with
# temporal noise, so that the encoder needs the bit rate; sine): no media is downloaded.
#
#   scripts/video-media.sh [DIR] [SECONDS]   (default target/release/video, 80 s: about 63 MB,
#                                             more than 20 s on the project's traces can carry)
#
# Does nothing when DIR/hls/stream.m3u8 is already a complete playlist. Takes about 10 s of
# CPU; run it before `alcc experiment run experiments/unmodified-video.toml` (the sweep refuses to
# start without the playlist and names this script).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-target/release/video}"
seconds="${2:-80}"
command -v ffmpeg >/dev/null || { echo "ffmpeg is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
playlist="$dir/hls/stream.m3u8"
if [ -f "$playlist" ] && grep -q '^#EXT-X-ENDLIST' "$playlist"; then
  echo "$playlist is there ($(du -sh "$dir/hls" | cut -f1))"
  exit 0
fi
rm -rf "$dir/hls.tmp"
mkdir -p "$dir/hls.tmp"
nice -n 10 ffmpeg -nostdin -v error -y \
  -f lavfi -i "testsrc2=size=1280x720:rate=30,noise=alls=12:allf=t" \
  -f lavfi -i "sine=frequency=440:sample_rate=48000" \
  -t "$seconds" -pix_fmt yuv420p \
  -c:v libx264 -preset ultrafast -b:v 6M -maxrate 6M -bufsize 6M -g 60 \
  -c:a aac -b:a 128k \
  -f hls -hls_time 4 -hls_playlist_type vod \
  -hls_segment_filename "$dir/hls.tmp/seg%03d.ts" "$dir/hls.tmp/stream.m3u8"
rm -rf "$dir/hls"
mv "$dir/hls.tmp" "$dir/hls"
echo "$playlist: $(grep -c '^seg' "$playlist") segments, $(du -sh "$dir/hls" | cut -f1)"
