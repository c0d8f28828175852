#!/bin/sh
# Ships a fedsched binary stripped, its debug information (line tables: `[profile.release]
# debug = "line-tables-only"`) kept beside it in BINARY.debug, linked by `.gnu_debuglink`, so a
# backtrace can still name files and lines where BINARY.debug is installed next to the binary
# or under /usr/lib/debug. Usage: tools/split-debug.sh [BINARY] (default
# target/release/fedsched). Needs binutils' objcopy.
set -eu
bin="${1:-target/release/fedsched}"
[ -f "$bin" ] || { echo "split-debug: no binary at $bin (cargo build --release first)" >&2; exit 1; }
command -v objcopy >/dev/null || { echo "split-debug: objcopy (binutils) is not installed" >&2; exit 1; }
objcopy --only-keep-debug "$bin" "$bin.debug"
chmod -x "$bin.debug"
objcopy --strip-all --add-gnu-debuglink="$bin.debug" "$bin" "$bin.stripped"
mv "$bin.stripped" "$bin"
echo "split-debug: $bin $(wc -c <"$bin") bytes, $bin.debug $(wc -c <"$bin.debug") bytes" >&2
