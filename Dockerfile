# tabula serve in an image that holds nothing but the static binary (FROM scratch: no base
# image is pulled). Build it with the release tool, which first builds the linux binaries
# afresh into dist/, checks that each is a static executable of its architecture, and only
# then builds the image of each:
#
#   go run ./packaging/release -targets linux/amd64,linux/arm64 -image localhost/tabula
#   podman run --rm -p 127.0.0.1:10002:10002 localhost/tabula:<version>-amd64
#
# A bare "podman build ." without those binaries fails at the COPY below (dist/ is ignored
# by git, so nothing stale can come from a checkout).
#
# The server runs as the unprivileged user 65532:65532, listens on every interface of the
# container (0.0.0.0:10002; publish it on loopback, as above) and keeps its data in the
# volume /data (in /data/tabula-data, the default --location, relative to the working
# directory), which starts empty and owned by that user (-v tabula-data:/data keeps it
# across containers). Arguments after the image are tabula serve's, Azurite's included, so
# an Azurite container's command line runs unchanged: --tablePort, --location /data/x,
# --inMemoryPersistence, --loose, --silent, -d /data/debug.log, ... Anyone who can reach the published port can use the development key
# it accepts by default: give your own with -e TABULA_ACCOUNTS=name:base64key.
FROM scratch
ARG TARGETARCH
COPY dist/bin/linux_${TARGETARCH}/tabula /tabula
COPY --chown=65532:65532 dist/image/data/ /data/
USER 65532:65532
VOLUME /data
WORKDIR /data
EXPOSE 10002
ENTRYPOINT ["/tabula", "serve", "--tableHost", "0.0.0.0"]
