#!/bin/sh
# A stand-in for the Dockerfile's base image (node:20-bookworm-slim) on hosts that cannot pull
# from Docker Hub but reach Debian's mirrors and the npm registry. It is imported into the
# engine under the name the Dockerfile uses, so the unchanged Dockerfile builds on it. Root only
# (debootstrap); test/e2e/container-image.test.ts runs it when that name is missing.
#
#   deploy/docker/stand-in-base.sh [podman|docker] [image-name]
#
# What node:20-bookworm-slim is, and what this makes instead:
# - debian:bookworm-slim: `debootstrap --variant=minbase bookworm` with the slim images' dpkg
#   excludes (no docs, man pages or locales) and apt settings, and the apt sources of
#   bookworm, bookworm-updates and bookworm-security.
# - Node 20 in /usr/local from nodejs.org's linux-x64 build: here the same build copied from this
#   host's Node 20 (bin/node and include/node; Debian bookworm's own nodejs is 18, too old), with
#   the npm that Node release bundles (npm@$NPM_VERSION from the npm registry: a host's npm may
#   have been upgraded since). Linked as the official image links them (npm, npx, nodejs).
# - libatomic1 (kept by the official image), user `node` (uid 1000), CMD ["node"].
# - Where this host trusts an extra CA for Node (NODE_EXTRA_CA_CERTS: a proxy that re-signs TLS),
#   that bundle too, as /usr/local/share/ca-certificates/host-extra-ca.crt with NODE_EXTRA_CA_CERTS
#   pointing at it, so that npm in the build reaches the npm registry as the host does.
# Not reproduced: yarn and corepack (the Dockerfile uses neither) and the image's
# docker-entrypoint.sh (the Dockerfile sets its own ENTRYPOINT).
set -eu

engine=${1:-podman}
name=${2:-docker.io/library/node:20-bookworm-slim}
node_prefix=${NODE_PREFIX:-$(dirname "$(dirname "$(command -v node)")")}
NPM_VERSION=${NPM_VERSION:-10.8.2} # the npm of Node 20.19 and 20.20
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

die() {
  echo "stand-in-base: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null || die "no debootstrap (apt-get install debootstrap)"
node_version=$("$node_prefix/bin/node" -p process.versions.node) || die "no node in $node_prefix/bin"
case "$node_version" in 20.*) ;; *) die "$node_prefix/bin/node is $node_version, not Node 20" ;; esac
[ -f "$node_prefix/include/node/node_api.h" ] || die "no Node headers in $node_prefix/include/node"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/tritium-base.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
root=$work/rootfs

echo "stand-in-base: debootstrap bookworm into $root" >&2
debootstrap --variant=minbase --include=libatomic1 bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  {
    tail -20 "$work/debootstrap.log" >&2
    die "debootstrap failed"
  }

# The slim images' dpkg and apt settings (debuerreotype's), then what they exclude removed.
cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
echo 'Acquire::GzipIndexes "true";' >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root/usr/share/man/"* "$root/usr/share/groff/"* "$root/usr/share/info/"* "$root/usr/share/lintian/"* "$root/usr/share/linda/"*
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin "$root/var/cache/apt/archives/"*.deb "$root/var/log/"*.log
: >"$root/etc/hostname"

# Node 20 in /usr/local, laid out as nodejs.org's tarball lays it out.
echo "stand-in-base: Node $node_version from $node_prefix, npm $NPM_VERSION from the npm registry" >&2
install -D -m 0755 "$node_prefix/bin/node" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/include" "$root/usr/local/lib/node_modules/npm"
cp -a "$node_prefix/include/node" "$root/usr/local/include/node"
(cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null) || die "cannot fetch npm@$NPM_VERSION"
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
ln -s node "$root/usr/local/bin/nodejs"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
extra_ca=
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r "$NODE_EXTRA_CA_CERTS" ]; then
  extra_ca=/usr/local/share/ca-certificates/host-extra-ca.crt
  install -D -m 0644 "$NODE_EXTRA_CA_CERTS" "$root$extra_ca"
fi
unset NODE_EXTRA_CA_CERTS # the host's path means nothing in the chroot
chroot "$root" /bin/sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
chroot "$root" /usr/local/bin/node -e 'process.exit(0)' || die "node does not run in the new root"
[ "$(chroot "$root" /usr/local/bin/npm --version)" = "$NPM_VERSION" ] || die "npm does not run in the new root"

echo "stand-in-base: importing as $name" >&2
tar --numeric-owner --xattrs -C "$root" -cf "$work/rootfs.tar" .
set --
[ -z "$extra_ca" ] || set -- --change "ENV NODE_EXTRA_CA_CERTS=$extra_ca"
"$engine" import "$@" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$node_version" \
  --change 'CMD ["node"]' \
  --change "LABEL org.opencontainers.image.description=\"Stand-in for node:20-bookworm-slim: debootstrap bookworm (slim) + Node $node_version + npm $NPM_VERSION, made by tritium's deploy/docker/stand-in-base.sh\"" \
  "$work/rootfs.tar" "$name" >/dev/null
echo "stand-in-base: $name ready" >&2
