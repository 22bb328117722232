# Shared by clients/go/test and clients/go/take (sourced): the Go toolchain, its caches, and
# the build of cmd/take keyed on a hash of the sources.

idmint_go_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
idmint_go_cache="$HOME/.cache/idmint-clients"

# No module proxy is reachable and the module needs none: the standard library only.
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOTELEMETRY=off
export GOCACHE="$idmint_go_cache/go-build" GOPATH="$idmint_go_cache/go-path"

# Go from Debian (apt-get as root when missing; 1.19 or newer).
idmint_go_ensure() {
  if ! command -v go >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "clients/go: installing Debian's golang-go" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q golang-go >&2 ||
        { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q golang-go >&2; }
    else
      echo "clients/go: the go toolchain is missing: install Debian's golang-go (1.19 or newer)" >&2
      return 1
    fi
  fi
  local version
  version="$(go env GOVERSION)"
  case "$version" in
    go1.1[0-8] | go1.1[0-8].* | go1.[0-9] | go1.[0-9].*)
      echo "clients/go: $version is too old; the module needs Go 1.19 or newer" >&2
      return 1 ;;
  esac
}

# A hash of the module's sources: a new build when any changes.
idmint_go_hash() {
  (cd "$idmint_go_dir" && find . -name '*.go' -o -name go.mod | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
}

# Builds cmd/take if this version of the sources has not been built yet; prints its path.
idmint_go_build_take() {
  idmint_go_ensure
  local bin="$idmint_go_cache/go-take-$(idmint_go_hash)/take"
  if [ ! -x "$bin" ]; then
    mkdir -p "$(dirname "$bin")"
    # Built aside and renamed: two first runs at once each get a whole binary.
    (cd "$idmint_go_dir" && go build -o "$bin.$$" ./cmd/take) >&2
    mv -f "$bin.$$" "$bin"
  fi
  echo "$bin"
}
