# tabula serve in an image that holds nothing but the static binary. Build the binary first,
# on the host (no base image is pulled, so this works without registry access):
#
#   CGO_ENABLED=0 go build -ldflags='-s -w' -o tabula ./cmd/tabula
#   docker build -t tabula .
#   docker run --rm -p 10002:10002 tabula
#
# The server listens on every interface of the container and keeps its data in /data
# (docker run -v tabula-data:/data … keeps it across containers). Anyone who can reach the
# published port can use the development key it accepts by default: give your own with
# -e TABULA_ACCOUNTS=name:base64key, or publish the port on loopback (-p 127.0.0.1:10002:10002).
FROM scratch
COPY tabula /tabula
VOLUME /data
EXPOSE 10002
ENTRYPOINT ["/tabula", "serve", "--addr", "0.0.0.0:10002", "--data", "/data"]
