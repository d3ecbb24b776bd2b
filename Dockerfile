# tritium container image (CPU). Build:   docker build -t tritium .
# Run:   docker run --rm -p 8000-8002:8000-8002 -v "$PWD/models:/models:ro" tritium
# The GPU variant (CUDA execution provider for ONNX models) is described in docs/deploy.md.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: the addon, the stubs' IPC module and dist/, installed as the npm package installs ----
FROM ${NODE_IMAGE} AS build
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ make python3 python3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
COPY native ./native
COPY scripts ./scripts
# The test tools of .venv are not needed to build: skip the Python set-up of `prepare`.
ENV TRITIUM_SKIP_PYTHON_SETUP=1
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY stub ./stub
COPY docs ./docs
COPY README.md LICENSE requirements.txt ./
# Pack, then install the tarball the way users do (--omit=dev), into /opt/tritium. The CPU image
# skips onnxruntime-node's CUDA download; its CPU provider ships in the npm package. The addon
# compiles against the base image's Node headers (/usr/local/include/node): without nodedir,
# node-gyp downloads them from nodejs.org, outside the npm registry, and fails where that is
# unreachable.
RUN npx tsc -p tsconfig.json \
 && npm pack --ignore-scripts --pack-destination /tmp \
 && ONNXRUNTIME_NODE_INSTALL=skip npm_config_nodedir=/usr/local \
    npm install -g --prefix /opt/tritium --omit=dev --no-audit --no-fund /tmp/tritium-*.tgz \
 && npm cache clean --force
# onnxruntime-node ships binaries for every platform (~290 MB); keep this one's (~45 MB).
RUN ort=/opt/tritium/lib/node_modules/tritium/node_modules/onnxruntime-node/bin/napi-v6 \
 && keep="linux/$(node -p process.arch)" \
 && find "$ort" -mindepth 2 -maxdepth 2 -type d ! -path "$ort/$keep" -exec rm -rf {} +

# ---- runtime: Node, Python with numpy and msgpack, tritium; nothing else ----
FROM ${NODE_IMAGE}
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-numpy python3-msgpack \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 1001 tritium \
 && useradd --system --uid 1001 --gid tritium --home-dir /home/tritium --create-home tritium \
 && mkdir /models && chown tritium:tritium /models
COPY --from=build /opt/tritium /opt/tritium
COPY deploy/docker/entrypoint.sh /usr/local/bin/tritium-entrypoint
# `tritonserver` too, so that launch scripts and KServe's runtime arguments work unchanged.
RUN ln -s /opt/tritium/bin/tritium /usr/local/bin/tritium \
 && ln -s /opt/tritium/bin/tritium /usr/local/bin/tritonserver
USER 1001:1001
WORKDIR /home/tritium
EXPOSE 8000 8001 8002
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8000/v2/health/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["tritium-entrypoint"]
CMD ["--model-repository=/models"]
