#!/usr/bin/env bash
# The gateway image without Docker (this machine has no daemon): lays out the `gateway` target of
# a Dockerfile in DIR as the image does, so bench/startup-rss.sh can start it.
#   bench/image-emulate.sh DIR [DOCKERFILE=deploy/docker/Dockerfile]
# What it takes from the Dockerfile, not from this script: the gateway stage's `ENV JAVA_OPTS`, its
# training `RUN` (the one that names GatewayTraining: the training and, since the nineteenth session,
# the static dump) and its ENTRYPOINT, with /app replaced by DIR/app and /tmp/ by DIR/.
# The jars come from this tree the way the build stage makes them (`package`, which shades the
# image's one jar, and `copy-dependencies`, runtime scope, for a Dockerfile whose entry point still
# names /app/lib/*), the JVM is this machine's `java` (a JDK 17, where the image
# has Temurin's 17 JRE). Then, for example:
#   bench/image-emulate.sh /tmp/img
#   bench/startup-rss.sh 9 '' 'LAUNCHER=/tmp/img/run.sh'
# DIR/run.sh drops its first argument (startup-rss.sh passes `gateway`), sets JAVA_OPTS to the
# Dockerfile's default when the environment has none (as `docker run` does) and execs the
# entry point's command. Set SKIP_BUILD=1 to reuse the jars already in target/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: bench/image-emulate.sh DIR [DOCKERFILE]}
dockerfile=${2:-$root/deploy/docker/Dockerfile}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
app=$dir/app

# The gateway stage's lines, continuation lines joined.
stage=$(awk '/^FROM .* AS /{s=$NF} s=="gateway"' "$dockerfile" | sed -e ':a' -e '/\\$/{N;s/\\\n//;ba}')
java_opts=$(sed -n 's/^ENV JAVA_OPTS="\(.*\)"$/\1/p' <<< "$stage" | head -1)
training=$(sed -n 's/^RUN \(.*GatewayTraining.*\)$/\1/p' <<< "$stage" | head -1)
entry=$(sed -n 's/^ENTRYPOINT \["sh", "-c", "\(.*\)", "spector-gateway"\]$/\1/p' <<< "$stage" | sed 's/\\"/"/g')
[ -n "$java_opts" ] && [ -n "$training" ] && [ -n "$entry" ] ||
  { echo "no ENV JAVA_OPTS, training command or ENTRYPOINT in the gateway stage of $dockerfile" >&2; exit 1; }

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  (cd "$root" && ./mvnw -B -q -DskipTests -Dspotless.check.skip=true -Djacoco.skip=true \
    -pl spector-gateway -am package \
    org.apache.maven.plugins:maven-dependency-plugin:3.7.0:copy-dependencies -DincludeScope=runtime)
fi
rm -rf "$app"
mkdir -p "$app/lib"
if grep -qF '/app/lib/*' <<< "$entry"; then # the module's jar and lib/ (the image before its one jar)
  cp "$(ls "$root"/spector-gateway/target/spector-gateway-*.jar | grep -v -- '-image\.jar$')" "$app/spector-gateway.jar"
  cp "$root"/spector-gateway/target/dependency/*.jar "$app/lib/"
else # the one jar the module's package shades
  cp "$root"/spector-gateway/target/spector-gateway-*-image.jar "$app/spector-gateway.jar"
fi

training=${training//\/tmp\//$dir/}   # first: $dir may be under /tmp
training=${training//\/app/$app}
echo "training: JAVA_OPTS=\"$java_opts\" $training" >&2
(export JAVA_OPTS="$java_opts"; eval "$training") > "$dir/emulate.log" 2>&1 ||
  { cat "$dir/emulate.log" >&2; exit 1; }
test -s "$app/gateway.jsa"

entry=${entry//\/app/$app}
{
  echo '#!/bin/sh'
  echo "# The gateway target of $dockerfile, emulated in $app by bench/image-emulate.sh."
  echo 'shift'
  printf ': "${JAVA_OPTS=%s}"\n' "$java_opts"
  echo 'export JAVA_OPTS'
  printf "exec sh -c '%s' spector-gateway \"\$@\"\n" "${entry//\'/\'\\\'\'}"
} > "$dir/run.sh"
chmod +x "$dir/run.sh"
echo "$dir/run.sh"
