import Crypto
import Foundation
import Hummingbird
import NIOCore
import WorkoutStore

/// The files of uploads being imported, in the data folder's `uploads/`: each written from the request body as it
/// arrives (never the whole body in memory), locked (`flock`) for as long as its upload runs, removed after.
///
/// A file left behind by a crash is unlocked: `removeOrphans` (at the server's start) removes those and only
/// those, so that another server sharing the folder keeps the files of its uploads in progress.
struct UploadSpool {
    let folder: String

    init(dataFolder: String) {
        folder = (dataFolder as NSString).appendingPathComponent("uploads")
    }

    /// One upload's file: written, locked and hashed as the body streams in; `close()` removes it.
    final class File {
        let path: String
        let descriptor: Int32
        private(set) var size = 0
        private var hasher = SHA256()

        fileprivate init(path: String) throws(StoreError) {
            // 0600 in a 0700 folder (created so when missing), like the stores' files.
            try StoreFiles.createPrivate(path: path)
            let descriptor = open(path, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .cannotCreate(path: path, detail: String(cString: strerror(errno))) }
            // Held until the file is removed: the sweep at start skips locked files (uploads of a running server).
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                Foundation.close(descriptor)
                throw .cannotCreate(path: path, detail: "locked by another process")
            }
            self.path = path
            self.descriptor = descriptor
        }

        /// Appends `buffer` (the whole of it, retrying short writes).
        func append(_ buffer: ByteBuffer) throws(StoreError) {
            var failed: Int32 = 0
            buffer.withUnsafeReadableBytes { bytes in
                hasher.update(bufferPointer: bytes)
                var offset = 0
                while offset < bytes.count {
                    let written = write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        failed = errno
                        return
                    }
                    offset += written
                }
            }
            guard failed == 0 else { throw .database(path: path, detail: String(cString: strerror(failed))) }
            size += buffer.readableBytes
        }

        /// SHA-256 of the bytes appended, lowercase hex.
        func digest() -> String {
            let digits = Array("0123456789abcdef".utf8)
            var hex: [UInt8] = []
            hex.reserveCapacity(64)
            for byte in hasher.finalize() {
                hex.append(digits[Int(byte >> 4)])
                hex.append(digits[Int(byte & 0x0F)])
            }
            return String(decoding: hex, as: UTF8.self)
        }

        /// Removes the file, then releases its lock.
        func close() {
            unlink(path)
            Foundation.close(descriptor)
        }
    }

    /// A new upload file.
    func create() throws(StoreError) -> File {
        try File(path: (folder as NSString).appendingPathComponent("\(UUID().uuidString).fit"))
    }

    /// Removes the files no running upload holds (left by a crash); returns how many.
    @discardableResult
    func removeOrphans() -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return 0 }
        var removed = 0
        for name in names {
            let path = (folder as NSString).appendingPathComponent(name)
            let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard descriptor >= 0 else { continue }
            defer { Foundation.close(descriptor) }
            var status = stat()
            guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
                flock(descriptor, LOCK_EX | LOCK_NB) == 0
            else { continue }
            if unlink(path) == 0 { removed += 1 }
        }
        return removed
    }
}
