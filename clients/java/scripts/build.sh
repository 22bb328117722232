# Builds the Java client with javac and jar (no Maven: it builds the same jar as pom.xml), into
# a cache keyed on a hash of the sources, so a second run is quick. Sourced by ../test, ../take
# and ../bench; needs bash. Sets JAVA_DIR (clients/java) and, per function, the paths it built.

JAVA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA_CACHE="${HOME}/.cache/idmint-clients"
JUNIT_JAR="/usr/share/java/junit-platform-console-standalone.jar"
VERSION="0.1.0"

die() {
    echo "$(basename "$0"): $*" >&2
    exit 1
}

# javac 17 or later, installed from Debian when missing and we are root.
need_jdk() {
    if ! command -v javac >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "installing openjdk-17-jdk-headless" >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless >&2 \
                || die "cannot install openjdk-17-jdk-headless"
        else
            die "javac (JDK 17 or later) is needed: apt-get install openjdk-17-jdk-headless"
        fi
    fi
    local major
    major="$(javac -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/')"
    [ "${major:-0}" -ge 17 ] 2>/dev/null || die "javac ${major} found; JDK 17 or later is needed"
}

# JUnit 5's console launcher, installed from Debian (junit5) when missing and we are root.
need_junit() {
    if [ ! -f "$JUNIT_JAR" ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "installing junit5" >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q junit5 >&2 || die "cannot install junit5"
        fi
        [ -f "$JUNIT_JAR" ] || die "JUnit 5 is needed ($JUNIT_JAR): apt-get install junit5"
    fi
}

# A hash of the files under the given paths (relative to JAVA_DIR).
sources_hash() {
    (cd "$JAVA_DIR" && find "$@" -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
}

# Compiles the sources under $2 (with classpath $3) into $1, unless done already.
compile_into() {
    local out="$1" src="$2" cp="$3"
    if [ -f "$out/.done" ]; then
        return 0
    fi
    rm -rf "$out" && mkdir -p "$out"
    local files
    files="$(find "$JAVA_DIR/$src" -name '*.java' | LC_ALL=C sort)"
    # shellcheck disable=SC2086
    javac --release 17 -Xlint:all,-try -Werror -encoding UTF-8 -cp "$cp" -d "$out" $files >&2 \
        || { rm -rf "$out"; die "javac failed on $src"; }
    touch "$out/.done"
}

# Marks the build folder $1 as in use and removes the builds of other sources (one per change
# of the sources, each a folder named by its hash) left unused for a day: the cache stays
# small, and a build another checkout is using now is left alone.
keep_only_recent() {
    touch "$1"
    find "$JAVA_CACHE" -maxdepth 1 -name "$2" ! -path "$1" -mtime +0 -exec rm -rf {} + 2>/dev/null || true
}

# The library's jar, the examples (take) and the benchmark: sets LIB_JAR and TOOLS_CLASSES.
build_lib() {
    need_jdk
    local dir="$JAVA_CACHE/java-$(sources_hash src/main src/examples src/bench scripts)"
    mkdir -p "$dir"
    keep_only_recent "$dir" 'java-[0-9a-f]*'
    compile_into "$dir/classes" src/main/java ""
    LIB_JAR="$dir/idmint-client-$VERSION.jar"
    if [ ! -f "$LIB_JAR" ]; then
        jar --create --file "$LIB_JAR.tmp" -C "$dir/classes" dev && mv "$LIB_JAR.tmp" "$LIB_JAR" \
            || die "jar failed"
    fi
    TOOLS_CLASSES="$dir/tools"
    if [ ! -f "$TOOLS_CLASSES/.done" ]; then
        rm -rf "$dir/tools-src" && mkdir -p "$dir/tools-src"
        cp -r "$JAVA_DIR/src/examples/java/." "$JAVA_DIR/src/bench/java/." "$dir/tools-src/"
        rm -rf "$TOOLS_CLASSES" && mkdir -p "$TOOLS_CLASSES"
        # shellcheck disable=SC2046
        javac --release 17 -Xlint:all,-try -Werror -encoding UTF-8 -cp "$LIB_JAR" -d "$TOOLS_CLASSES" \
            $(find "$dir/tools-src" -name '*.java' | LC_ALL=C sort) >&2 \
            || { rm -rf "$TOOLS_CLASSES"; die "javac failed on the examples"; }
        touch "$TOOLS_CLASSES/.done"
    fi
}

# The unit tests: sets TEST_CLASSES (after build_lib).
build_tests() {
    need_junit
    local dir="$JAVA_CACHE/java-test-$(sources_hash src scripts)"
    mkdir -p "$dir"
    keep_only_recent "$dir" 'java-test-*'
    compile_into "$dir/classes" src/test/java "$LIB_JAR:$JUNIT_JAR"
    TEST_CLASSES="$dir/classes"
}
