# Multi-stage build: compile in the Rust image, run as a non-root user on slim Debian.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY src ./src
COPY templates ./templates
# `flakegate setup` builds the App manifest in.
COPY app-manifest.yml ./
COPY examples ./examples
# The commit `flakegate --version` names (the build context has no .git):
# docker build --build-arg FLAKEGATE_GIT_COMMIT="commit $(git rev-parse --short=12 HEAD)" .
ARG FLAKEGATE_GIT_COMMIT=
RUN cargo build --release --locked --bin flakegate

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data flakegate \
    && mkdir -p /data && chown flakegate /data
COPY --from=build /src/target/release/flakegate /usr/local/bin/flakegate
USER flakegate
WORKDIR /data
ENV FLAKEGATE_LISTEN=0.0.0.0:3000 DATABASE_URL=sqlite:///data/flakegate.db?mode=rwc
EXPOSE 3000
ENTRYPOINT ["flakegate"]
CMD ["serve"]
