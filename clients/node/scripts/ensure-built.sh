# Sourced by ./test and ./take: makes sure Node (20 or later) is here, the npm packages of
# package-lock.json are installed (once per lock file, in a cache folder shared by every
# checkout), and dist/ is built from this checkout's sources (again only when they changed).
# Messages go to stderr; stdout stays the caller's.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${HOME}/.cache/idmint-clients"

say() { echo "clients/node: $*" >&2; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Node (Debian's nodejs and npm)"
    apt-get install -y nodejs npm >&2 || { apt-get update >&2 && apt-get install -y nodejs npm >&2; } || exit 1
  else
    say "Node 20 or later is needed (node and npm on PATH)"; exit 1
  fi
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  say "Node 20 or later is needed, this is $(node --version)"; exit 1
fi

hash_of() { cat "$@" | sha256sum | cut -c1-16; }

# The npm packages: `npm ci` against the committed lock file, in a folder named by its hash.
deps="${cache}/node-deps-$(hash_of "$here/package.json" "$here/package-lock.json")"
if [ ! -f "$deps/.done" ]; then
  say "installing npm packages (npm ci) into $deps"
  rm -rf "$deps" && mkdir -p "$deps"
  cp "$here/package.json" "$here/package-lock.json" "$deps/"
  (cd "$deps" && npm ci --cache "${cache}/npm" --ignore-scripts --no-audit --no-fund >&2) || exit 1
  touch "$deps/.done"
fi
if [ "$(readlink "$here/node_modules" 2>/dev/null)" != "$deps/node_modules" ]; then
  rm -rf "$here/node_modules"
  ln -s "$deps/node_modules" "$here/node_modules"
fi

# The build: dist/ stamped with the hash of what it was built from.
sources="$(hash_of "$here/package.json" "$here/tsconfig.json" "$here/tsconfig.cjs.json" "$here/scripts/build.mjs" $(find "$here/src" -type f -name '*.ts' | sort))"
if [ "$(cat "$here/dist/.sources" 2>/dev/null)" != "$sources" ]; then
  say "building dist/ (ESM and CJS) with TypeScript"
  node "$here/scripts/build.mjs" >&2 || exit 1
  echo "$sources" > "$here/dist/.sources"
fi
