# The HTTP transport in a container: a static musl binary on an empty base, run as a non-root
# user. Build and run (the token is required: a container listens on 0.0.0.0, and the server
# refuses any non-loopback address without a bearer token):
#
#   docker build -t resilient-write .
#   docker run --rm -p 127.0.0.1:8000:8000 -v "$PWD:/workspace" \
#       -e RW_AUTH_TOKEN="$(cat token.txt)" resilient-write
#
# The client connects to http://localhost:8000/mcp with `Authorization: Bearer <token>`.
# Published on another host port or name, add `--allowed-host NAME[:PORT]` (the Host header
# is checked). The mounted directory must be writable by uid 65532 (or pass `--user`).

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-alpine AS build
# musl-dev: the C runtime for crates that compile C (psm, under stacker).
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin resilient-write \
    && cp target/release/resilient-write /resilient-write \
    && mkdir -p /rootfs/workspace /rootfs/tmp \
    && chmod 1777 /rootfs/tmp

FROM scratch
# COPY resets ownership to root: /tmp keeps its 1777 mode, /workspace is given to the user.
COPY --from=build /rootfs/tmp /tmp
COPY --from=build --chown=65532:65532 /rootfs/workspace /workspace
COPY --from=build /resilient-write /usr/local/bin/resilient-write
USER 65532:65532
WORKDIR /workspace
ENV TMPDIR=/tmp
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/resilient-write"]
CMD ["serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8000", \
     "-w", "/workspace", "--state-dir", "/workspace"]
