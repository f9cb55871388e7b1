import ArgumentParser
import Foundation
import WorkoutModel
import WorkoutStore

/// The `--json` flag of the reading and deleting commands.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON (sorted keys, ISO 8601 dates) instead of text, for scripts.")
    var json = false
}

/// Runs a store call; a store error becomes the tool's one-line message and a non-zero exit.
func userFacing<T>(_ body: () throws(StoreError) -> T) throws(UserFacingError) -> T {
    do {
        return try body()
    } catch {
        throw UserFacingError(error)
    }
}

/// Prints workouts one per line (text) or as a JSON array; a note on standard error when there
/// are none, so standard output stays empty for scripts.
func printWorkouts(_ stored: [Workout], json: Bool, emptyNote: String) throws {
    let workouts = stored.map(Format.presented)
    if json {
        emitLine(try Format.json(workouts))
    } else if workouts.isEmpty {
        FileHandle.standardError.write(Data((emptyNote + "\n").utf8))
    } else {
        emitLine(Format.workoutLines(workouts).joined(separator: "\n"))
    }
}

/// Checks a `--limit` value.
func validateLimit(_ limit: Int?) throws {
    if let limit, limit < 1 {
        throw ValidationError("--limit must be at least 1 (got \(limit))")
    }
}

/// Writes `bytes` to `path` readable by its owner only (0600: reports and exports hold heart rate).
///
/// The bytes go to a new file in the same folder, created 0600 from the start (never readable by
/// others, not even for a moment), which then replaces `path`: an existing file is replaced whole,
/// so it ends 0600 too, and a failed write leaves it as it was.
/// - Throws: `UserFacingError` saying what failed and to choose another `--output`.
func writePrivateFile(_ bytes: [UInt8], to path: String) throws(UserFacingError) {
    let folder = (path as NSString).deletingLastPathComponent
    let temporary = (folder.isEmpty ? "." : folder) + "/.\((path as NSString).lastPathComponent).\(UUID().uuidString).tmp"
    func failure(_ what: String) -> UserFacingError {
        UserFacingError("cannot write \(path): \(what); choose another --output")
    }
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw failure(String(cString: strerror(errno))) }
    var written = 0
    var problem: String?
    if fchmod(descriptor, 0o600) != 0 { problem = String(cString: strerror(errno)) }
    while problem == nil, written < bytes.count {
        let result = bytes.withUnsafeBytes { buffer in
            write(descriptor, buffer.baseAddress.map { $0 + written }, buffer.count - written)
        }
        if result < 0 {
            if errno == EINTR { continue }
            problem = String(cString: strerror(errno))
        } else {
            written += result
        }
    }
    if problem == nil, fsync(descriptor) != 0 { problem = String(cString: strerror(errno)) }
    if close(descriptor) != 0, problem == nil { problem = String(cString: strerror(errno)) }
    if problem == nil, rename(temporary, path) != 0 { problem = String(cString: strerror(errno)) }
    if let problem {
        unlink(temporary)
        throw failure(problem)
    }
}
