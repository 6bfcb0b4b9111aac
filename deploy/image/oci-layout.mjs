// Writes an OCI image layout (https://github.com/opencontainers/image-spec) for one
// image on one or more platforms, one layer each: the directory build.sh then packs into
// the archive `podman load` and `docker load` take. Written here rather than by a tool
// because the format is a few small JSON files and content-addressed blobs, and so the
// image's bytes depend only on its inputs (podman import or buildah commit stamp the time
// of the build).
//
//   node oci-layout.mjs OUTDIR CONFIG.json
//
// CONFIG.json: { name, version, created (epoch s), config (the image config's "config":
// Entrypoint, Cmd, Env, ...), labels, platforms: [{ architecture, variant?, layer }] },
// where layer is the path of that platform's uncompressed layer (its digest is the
// image's diff_id; the blob is its gzip).
//
// index.json names one entry, the image, pointing to an image index of its platforms (the
// form `docker buildx` and `podman manifest push` give a multi-platform image): a loader
// picks the host's platform from it. Beside it, Docker's manifest.json, as the archives
// `docker save` writes since Docker 25, for Docker versions that read only that: it has
// no notion of platforms, so the first platform's image is NAME:VERSION and each is also
// NAME:VERSION-ARCH.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

const [outDir, configPath] = process.argv.slice(2);
if (!outDir || !configPath) {
  console.error('usage: node oci-layout.mjs OUTDIR CONFIG.json');
  process.exit(2);
}
const spec = JSON.parse(readFileSync(configPath, 'utf8'));
if (!Array.isArray(spec.platforms) || spec.platforms.length === 0) {
  console.error('oci-layout: CONFIG.json names no platforms');
  process.exit(2);
}
const blobs = join(outDir, 'blobs', 'sha256');
mkdirSync(blobs, { recursive: true });

const sha256 = () => createHash('sha256');
async function hashFile(path) {
  const h = sha256();
  await pipeline(createReadStream(path), h);
  return h.digest('hex');
}
function writeBlob(bytes) {
  const hex = sha256().update(bytes).digest('hex');
  writeFileSync(join(blobs, hex), bytes);
  return { digest: `sha256:${hex}`, size: bytes.length };
}

/** A layer: hash of the tar (diff_id), then its gzip as a blob under its own hash. */
async function writeLayer(layerPath, tmpName) {
  const diffId = `sha256:${await hashFile(layerPath)}`;
  const tmpGz = join(blobs, tmpName);
  const gzHash = sha256();
  let gzSize = 0;
  await pipeline(createReadStream(layerPath), createGzip({ level: 9 }), async function* (chunks) {
    for await (const c of chunks) {
      gzHash.update(c);
      gzSize += c.length;
      yield c;
    }
  }, createWriteStream(tmpGz));
  const gzHex = gzHash.digest('hex');
  renameSync(tmpGz, join(blobs, gzHex));
  return { diffId, layer: { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: `sha256:${gzHex}`, size: gzSize } };
}

const created = new Date(spec.created * 1000).toISOString().replace(/\.000Z$/, 'Z');
const ref = `${spec.name}:${spec.version}`;
// The layers are compressed side by side: zlib runs on libuv's threads, one core each.
const layers = await Promise.all(spec.platforms.map((p, i) => writeLayer(p.layer, `.layer-${i}.tmp`)));

const images = spec.platforms.map((p, i) => {
  const { diffId, layer } = layers[i];
  const platform = { architecture: p.architecture, os: 'linux', ...(p.variant ? { variant: p.variant } : {}) };
  const imageConfig = {
    created,
    ...platform,
    config: { ...spec.config, Labels: spec.labels },
    rootfs: { type: 'layers', diff_ids: [diffId] },
    history: [{ created, created_by: 'deploy/image/build.sh (mmdebstrap extract + the wcf-agent binary)' }],
  };
  const config = { mediaType: 'application/vnd.oci.image.config.v1+json', ...writeBlob(Buffer.from(JSON.stringify(imageConfig))) };
  const manifest = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config,
    layers: [layer],
    annotations: spec.labels,
  };
  return { platform, config, layer, diffId, manifest: { mediaType: manifest.mediaType, ...writeBlob(Buffer.from(JSON.stringify(manifest))), platform } };
});

const imageIndex = {
  schemaVersion: 2,
  mediaType: 'application/vnd.oci.image.index.v1+json',
  manifests: images.map((im) => im.manifest),
  annotations: spec.labels,
};
const imageIndexBlob = writeBlob(Buffer.from(JSON.stringify(imageIndex)));
const index = {
  schemaVersion: 2,
  mediaType: 'application/vnd.oci.image.index.v1+json',
  manifests: [
    {
      mediaType: imageIndex.mediaType,
      ...imageIndexBlob,
      // The first names the image for podman (and skopeo), the second for Docker and containerd.
      annotations: { 'org.opencontainers.image.ref.name': ref, 'io.containerd.image.name': ref },
    },
  ],
};
writeFileSync(join(outDir, 'index.json'), JSON.stringify(index));
writeFileSync(join(outDir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
writeFileSync(
  join(outDir, 'manifest.json'),
  JSON.stringify(
    images.map((im, i) => ({
      Config: `blobs/sha256/${im.config.digest.slice(7)}`,
      RepoTags: [...(i === 0 ? [ref] : []), `${ref}-${im.platform.architecture}`],
      Layers: [`blobs/sha256/${im.layer.digest.slice(7)}`],
    })),
  ),
);
console.log(
  JSON.stringify({
    ref,
    index: imageIndexBlob.digest,
    platforms: images.map((im) => ({ ...im.platform, manifest: im.manifest.digest, config: im.config.digest, layer: im.layer.digest, layerSize: im.layer.size, diffId: im.diffId })),
  }),
);
