package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * Objects on the local file system: {@code <root>/<tenant or _>/<namespace>/<key>}. An upload is
 * written to a temporary file under {@code <root>/.tmp} and moved into place atomically, so a
 * reader sees the old object or the new one, never half of one.
 *
 * <p>The calls block on file I/O. The reference owner makes them on its event loops, briefly, as a
 * demo node may; a production owner would hand them to another executor. Thread-safe: uploads
 * share nothing but the directories.
 */
final class ObjectStore {
    /** The directory of untenanted keys; never a tenant, whose names start with [a-z0-9]. */
    static final String UNTENANTED_DIR = "_";

    private static final String TMP_DIR = ".tmp";

    private final Path root;
    private final Path tmp;

    ObjectStore(Path root) throws IOException {
        this.root = root.toAbsolutePath();
        this.tmp = this.root.resolve(TMP_DIR);
        Files.createDirectories(tmp);
    }

    /** Returns the root directory. */
    Path root() {
        return root;
    }

    /**
     * Returns a key when it matches {@code [A-Za-z0-9._-]{1,128}} and is not {@code .} or {@code
     * ..}.
     *
     * @throws SpectorException BAD_REQUEST naming the key otherwise
     */
    static String checkKey(String key) {
        requireNonNull(key, "key");
        if (!OwnerLimits.OBJECT_KEY_CHARS.allows(key.length())) {
            throw SpectorException.badRequest(
                    "key",
                    key.length() + " chars (expected: " + OwnerLimits.OBJECT_KEY_CHARS.min() + ".."
                            + OwnerLimits.OBJECT_KEY_CHARS.max() + " chars of [A-Za-z0-9._-])");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9')
                    || c == '.'
                    || c == '_'
                    || c == '-';
            if (!ok) {
                throw SpectorException.badRequest(
                        "key",
                        "has '" + (c < 0x20 || c >= 0x7f ? '?' : c) + "' at " + i + " (expected: [A-Za-z0-9._-])");
            }
        }
        if (key.equals(".") || key.equals("..")) {
            throw SpectorException.badRequest("key", "'" + key + "' (expected: not . or ..)");
        }
        return key;
    }

    /** Returns the file of an object; the key must have passed {@link #checkKey}. */
    Path pathOf(@Nullable String tenant, String namespace, String key) {
        return root.resolve(tenant == null ? UNTENANTED_DIR : tenant)
                .resolve(namespace)
                .resolve(checkKey(key));
    }

    /**
     * Returns the keys of a namespace's objects, sorted; none when it has no directory.
     *
     * @throws SpectorException PAYLOAD_TOO_LARGE past {@code max} objects
     */
    List<String> keys(@Nullable String tenant, String namespace, int max) throws IOException {
        Path dir = root.resolve(tenant == null ? UNTENANTED_DIR : tenant).resolve(namespace);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<String> keys = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, Files::isRegularFile)) {
            for (Path f : files) {
                if (keys.size() == max) {
                    throw SpectorException.of(
                            ErrorCode.PAYLOAD_TOO_LARGE,
                            namespace + " has more than " + max + " objects (expected: <= " + max + " to move)",
                            Map.of("limitBytes", (long) max));
                }
                keys.add(f.getFileName().toString());
            }
        }
        Collections.sort(keys);
        return keys;
    }

    /** Writes a whole object at once (through a temporary file, moved into place). */
    Stored write(Path target, byte[] data) throws IOException {
        Upload upload = begin(target);
        ByteBuf content = Unpooled.wrappedBuffer(data);
        try {
            upload.write(content);
            return upload.finish();
        } finally {
            content.release();
            upload.abort();
        }
    }

    /** Starts an upload to a temporary file. */
    Upload begin(Path target) throws IOException {
        Path file = tmp.resolve("upload-" + UUID.randomUUID() + ".tmp");
        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        return new Upload(target, file, channel);
    }

    /** Deletes an object; answers whether it existed. */
    boolean delete(Path target) throws IOException {
        return Files.deleteIfExists(target);
    }

    /**
     * The outcome of an upload.
     *
     * @param bytes the object's size
     * @param sha256 its SHA-256, lower-case hex
     * @param created whether no object had the key before
     */
    record Stored(long bytes, String sha256, boolean created) {}

    /** One object being written; event loop confined. */
    static final class Upload {
        private final Path target;
        private final Path file;
        private final FileChannel channel;
        private final MessageDigest sha256 = Digests.sha256();
        private long bytes;
        private boolean closed;

        private Upload(Path target, Path file, FileChannel channel) {
            this.target = target;
            this.file = file;
            this.channel = channel;
        }

        /** Appends a piece of the body; the caller keeps ownership of the buffer. */
        void write(ByteBuf content) throws IOException {
            for (ByteBuffer b : content.nioBuffers()) {
                sha256.update(b.duplicate());
                while (b.hasRemaining()) {
                    channel.write(b);
                }
            }
            bytes += content.readableBytes();
        }

        /** Flushes the file to disk and moves it into place. */
        Stored finish() throws IOException {
            channel.force(false);
            channel.close();
            closed = true;
            Files.createDirectories(target.getParent());
            boolean existed = Files.exists(target);
            try {
                Files.move(file, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(file, target, StandardCopyOption.REPLACE_EXISTING);
            }
            return new Stored(bytes, HexFormat.of().formatHex(sha256.digest()), !existed);
        }

        /** Drops the temporary file; harmless after {@link #finish}. */
        void abort() {
            try {
                if (!closed) {
                    closed = true;
                    channel.close();
                }
                Files.deleteIfExists(file);
            } catch (IOException e) {
                // Best effort: a stray temp file under .tmp is harmless and never read.
            }
        }
    }
}
