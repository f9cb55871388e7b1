import Foundation
import Testing
import WorkoutServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Imports take memory in proportion to the file, at most `bound` times it at their peak, and give it back after
/// (issue 27: a 60 MB FIT upload peaked at 5.95 GB and kept 4.06 GB resident; `workout import` shared the path).
/// The server and `workout import` run as processes of their own; their memory is read from /proc.
@Suite("import memory", .serialized)
struct ImportMemoryTests {
    /// The most memory an import may take at its peak, as a multiple of the file's size (docs/server-operations-limits.md).
    static let bound = 5.0
    /// The size of the test file, megabytes ($WORKOUT_IMPORT_MEMORY_MB; 12 by default, which a debug build imports in
    /// about a minute; 60 MB, the size, takes about five: measured in docs/server-operations-limits.md).
    static let megabytes = Double(ProcessInfo.processInfo.environment["WORKOUT_IMPORT_MEMORY_MB"] ?? "") ?? 12

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A large valid FIT file: the records of a real ironman repeated with shifted timestamps
    /// (scripts/make-large-fit.py).
    static func largeFIT(in folder: String) throws -> String {
        let path = folder + "/large.fit"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", repository.appendingPathComponent("scripts/make-large-fit.py").path,
            SharedData.directory + "/fit/sl_20181013_kona_ironman.fit", path, "--megabytes", "\(megabytes)",
        ]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("make-large-fit.py failed") }
        return path
    }

    /// A field of /proc/PID/status in bytes (VmHWM: peak resident, VmRSS: resident now).
    static func status(_ pid: Int32, _ field: String) throws -> Int {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw TestFailure("no \(field) in /proc/\(pid)/status") }
        return kilobytes * 1024
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.0f MB", Double(bytes) / 1_048_576) }

    @Test func aLargeUploadStaysWithinItsBoundAndTheMemoryIsGivenBack() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-memory-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fit = try Self.largeFIT(in: folder)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: fit)[.size] as? Int)

        let data = folder + "/server"
        let directory = try ServerDirectory(folder: data)
        let token = try directory.addAthlete(name: "max").token
        let server = Process()
        server.executableURL = URL(fileURLWithPath: try ConnectionLimitTests.executable())
        server.arguments = ["serve", "--db", data, "--port", "0", "--log-level", "critical"]
        let output = Pipe()
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        let line = String(decoding: output.fileHandleForReading.availableDataLine(), as: UTF8.self)
        let base = try #require(line.hasPrefix("listening on ") ? String(line.dropFirst(13)) : nil, "\(line)")
        // The server as it is before the upload (its pools and caches started by a first request).
        var request = URLRequest(url: try #require(URL(string: base + "/v1/workouts")))
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        _ = try await URLSession.shared.data(for: request)
        let baseline = try Self.status(server.processIdentifier, "VmRSS")

        request.httpMethod = "POST"
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        request.timeoutInterval = 3600
        let client = URLSession(configuration: .ephemeral)
        let (body, response) = try await client.upload(for: request, fromFile: URL(fileURLWithPath: fit))
        let code = (response as? HTTPURLResponse)?.statusCode
        #expect(code == 201, "\(String(decoding: body.prefix(300), as: UTF8.self))")
        let peak = try Self.status(server.processIdentifier, "VmHWM")
        let after = try Self.status(server.processIdentifier, "VmRSS")
        let figures =
            "file \(Self.megabytes(size)), server before \(Self.megabytes(baseline)), peak \(Self.megabytes(peak)), "
            + "after \(Self.megabytes(after))"
        print("import memory (upload): \(figures)")
        #expect(Double(peak - baseline) <= Self.bound * Double(size), "\(figures)")
        // Given back: what stays is the server's own caches (the athlete's store, its SQLite page cache, the
        // first upload's pools: about 7 MB whatever the file), not the import's (4 GB stayed after 60 MB before).
        #expect(Double(after - baseline) <= 0.5 * Double(size) + 16 * 1_048_576, "\(figures)")
    }

    /// The peak resident memory of `workout import FILE` into a new store in `folder` (GNU time's %M, from wait4).
    static func peakOfImport(_ file: String, _ folder: String) throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
        process.arguments = [
            "-f", "peak-kb %M", try ConnectionLimitTests.executable(), "import", file, "--db",
            folder + "/\(UUID()).sqlite",
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = text.split(separator: "\n").last(where: { $0.hasPrefix("peak-kb ") }),
            let kilobytes = Int(line.dropFirst(8))
        else { throw TestFailure("workout import \(file) failed: \(text.suffix(500))") }
        return kilobytes * 1024
    }

    @Test func workoutImportOfALargeFileStaysWithinItsBound() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-memory-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fit = try Self.largeFIT(in: folder)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: fit)[.size] as? Int)
        // The process's own memory: the peak of importing a small real file (28 KB).
        let small = try Self.peakOfImport(SharedData.directory + "/fit/fp_sample-activity-indoor-trainer.fit", folder)
        let peak = try Self.peakOfImport(fit, folder)
        let figures =
            "file \(Self.megabytes(size)), workout import peak \(Self.megabytes(peak)) "
            + "(of a 28 KB file: \(Self.megabytes(small)))"
        print("import memory (workout import): \(figures)")
        #expect(Double(peak - small) <= Self.bound * Double(size), "\(figures)")
    }
}
