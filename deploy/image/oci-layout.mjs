// Writes an OCI image layout (https://github.com/opencontainers/image-spec) for one
// layer: the directory build.sh then packs into the archive `podman load` and
// `docker load` take. Written here rather than by a tool because the format is four
// small JSON files and content-addressed blobs, and so the image's bytes depend only
// on its inputs (podman import or buildah commit stamp the time of the build).
//
//   node oci-layout.mjs LAYER.tar OUTDIR CONFIG.json
//
// LAYER.tar: the uncompressed layer (its digest is the image's diff_id; the blob is
// its gzip). CONFIG.json: { name, version, created (epoch s), config (the image
// config's "config": Entrypoint, Cmd, Env, ...), labels }.
//
// The directory holds both an OCI index.json and Docker's manifest.json, as the
// archives `docker save` writes since Docker 25: podman and every Docker load it.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

const [layerPath, outDir, configPath] = process.argv.slice(2);
if (!layerPath || !outDir || !configPath) {
  console.error('usage: node oci-layout.mjs LAYER.tar OUTDIR CONFIG.json');
  process.exit(2);
}
const spec = JSON.parse(readFileSync(configPath, 'utf8'));
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

// The layer: hash of the tar (diff_id), then its gzip as a blob under its own hash.
const diffId = `sha256:${await hashFile(layerPath)}`;
const tmpGz = join(blobs, '.layer.tmp');
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
const layer = { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: `sha256:${gzHex}`, size: gzSize };

const created = new Date(spec.created * 1000).toISOString().replace(/\.000Z$/, 'Z');
const imageConfig = {
  created,
  architecture: 'amd64',
  os: 'linux',
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
const manifestBlob = writeBlob(Buffer.from(JSON.stringify(manifest)));
const ref = `${spec.name}:${spec.version}`;
const index = {
  schemaVersion: 2,
  mediaType: 'application/vnd.oci.image.index.v1+json',
  manifests: [
    {
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      ...manifestBlob,
      // The first names the image for podman (and skopeo), the second for Docker and containerd.
      annotations: { 'org.opencontainers.image.ref.name': ref, 'io.containerd.image.name': ref },
    },
  ],
};
writeFileSync(join(outDir, 'index.json'), JSON.stringify(index));
writeFileSync(join(outDir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
writeFileSync(
  join(outDir, 'manifest.json'),
  JSON.stringify([{ Config: `blobs/sha256/${config.digest.slice(7)}`, RepoTags: [ref], Layers: [`blobs/sha256/${gzHex}`] }]),
);
console.log(JSON.stringify({ ref, manifest: manifestBlob.digest, config: config.digest, layer: layer.digest, layerSize: gzSize, diffId }));
