import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Private-by-default store files: an athlete's heart rate is nobody else's business.
///
/// A new store's folder is created 0700 and its database file 0600 before SQLite opens it; SQLite
/// gives the WAL and shared-memory files the database file's mode, so they are 0600 too. An existing
/// store is never chmodded: `permissionWarning(path:)` says what is readable by others and the command
/// that fixes it (the caller decides where to print it).
public enum StoreFiles {
    /// Mode of a folder the store creates.
    public static let folderMode: mode_t = 0o700
    /// Mode of a database file the store creates.
    public static let fileMode: mode_t = 0o600

    /// Creates the store's folder (0700, with any missing parents) and an empty database file (0600).
    ///
    /// Called where the store creates a new file (and by the server for its own files). An existing
    /// folder is left as it is (it may be a shared place such as /tmp that the user chose); an existing
    /// file too.
    public static func createPrivate(path: String) throws(StoreError) {
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) {
            do {
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: NSNumber(value: folderMode)])
            } catch {
                throw .cannotCreate(path: path, detail: (error as NSError).localizedDescription)
            }
            // The umask may have taken bits away from the mode asked for, never added any; set it exactly.
            _ = chmod(folder, folderMode)
        }
        guard folder.isEmpty || FileManager.default.isWritableFile(atPath: folder) else {
            throw .readOnly(path: path)
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, fileMode)
        if descriptor < 0 {
            let code = errno
            if code == EEXIST { return }  // created meanwhile by another program: it is theirs
            throw .cannotCreate(path: path, detail: String(cString: strerror(code)))
        }
        _ = fchmod(descriptor, fileMode)
        _ = close(descriptor)
    }

    /// A warning when an existing store (its file, WAL and shared-memory files, or its folder) can be
    /// read by other users, with the command that makes it private; nil when it is private already.
    public static func permissionWarning(path: String) -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        // Only the store's own folder counts: a shared folder (/tmp) holds other people's files too.
        let folders = !folder.isEmpty && isStoreFolder(folder, of: path) ? [folder] : []
        return permissionWarning(
            subject: "the workout store", files: [path, path + "-wal", path + "-shm", path + "-journal"],
            folders: folders)
    }

    /// A warning when any of `files` or `folders` (missing ones are skipped) can be read by other users,
    /// naming them and the `chmod 600` / `chmod 700` command that makes them private; nil when none can.
    ///
    /// `subject` starts the message ("the workout store can be read by other users …"). Nothing is chmodded.
    public static func permissionWarning(subject: String, files: [String], folders: [String]) -> String? {
        let exposedFiles = files.filter { file in mode(of: file).map { $0 & 0o077 != 0 } ?? false }
        let exposedFolders = folders.filter { folder in mode(of: folder).map { $0 & 0o077 != 0 } ?? false }
        guard !exposedFiles.isEmpty || !exposedFolders.isEmpty else { return nil }
        var commands: [String] = []
        if !exposedFiles.isEmpty { commands.append("chmod 600 " + exposedFiles.map(shellQuoted).joined(separator: " ")) }
        if !exposedFolders.isEmpty {
            commands.append("chmod 700 " + exposedFolders.map(shellQuoted).joined(separator: " "))
        }
        let what = (exposedFiles + exposedFolders).joined(separator: ", ")
        return "warning: \(subject) can be read by other users (\(what)); to make it private, run: "
            + commands.joined(separator: " && ")
    }

    /// Permission bits of a file or folder; nil when it does not exist.
    static func mode(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// Whether `folder` is the store's own (the default location's `workout-engine` folder), as opposed
    /// to a folder the user chose to put the file in, which may well be shared on purpose.
    private static func isStoreFolder(_ folder: String, of path: String) -> Bool {
        (folder as NSString).lastPathComponent == "workout-engine"
    }

    private static func shellQuoted(_ text: String) -> String {
        let safe = text.allSatisfy { $0.isLetter || $0.isNumber || "/._-+,:@".contains($0) }
        return safe ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
