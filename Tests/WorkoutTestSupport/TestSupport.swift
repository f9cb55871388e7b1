import Foundation
import Testing

// Helpers every test target shares (issue 28): the test PostgreSQL, the shared recordings, the
// backends a test runs on, temporary folders, the built executables and a deadline-based wait. A
// test-support target, not a product: only test targets depend on it.

/// A failure of a test's set-up, with what to do about it.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The throw-away PostgreSQL cluster of scripts/test.sh (scripts/test-postgres.sh).
///
/// Without WORKOUT_TEST_POSTGRES_URL the PostgreSQL tests cannot run: under CI=true that is a failure,
/// never a silent skip; elsewhere (a developer's `swift test`) they are skipped with the reason.
public enum TestPostgres {
    public static var url: String? {
        ProcessInfo.processInfo.environment["WORKOUT_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
    public static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    /// Run the test when there is a server, or when there is none under CI (where it must fail).
    public static var available: Bool { url != nil || inCI }

    /// The test cluster's streaming-replication hot standby (scripts/test-postgres.sh), its `workout_test`.
    public static var replicaURL: String? {
        ProcessInfo.processInfo.environment["WORKOUT_TEST_POSTGRES_REPLICA_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
    /// Run the replica tests when there is one, or under CI (where its absence fails).
    public static var replicaAvailable: Bool { replicaURL != nil || inCI }

    /// The server's URL; throws, saying how to get one, when there is none.
    public static func requiredURL() throws -> String {
        guard let url else {
            throw TestFailure("WORKOUT_TEST_POSTGRES_URL is not set: run scripts/test.sh (it starts a test PostgreSQL)")
        }
        return url
    }

    /// `url` naming database `name` instead of its own.
    public static func url(_ url: String, database name: String) throws -> String {
        guard let slash = url.lastIndex(of: "/") else { throw TestFailure("no database in \(url)") }
        return String(url[...slash]) + name
    }

    /// A new, empty database on the test cluster (named `<prefix>_<random>`), for a test that needs the
    /// database to itself; returns its URL.
    public static func freshDatabase(prefix: String = "workout") throws -> String {
        let base = try requiredURL()
        let name = prefix + "_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try psql(base, "CREATE DATABASE \(name)")
        return try url(base, database: name)
    }

    /// Runs one statement with psql on `url`; throws with psql's message when it fails.
    @discardableResult
    public static func psql(_ url: String, _ statement: String) throws -> String {
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        psql.arguments = ["psql", url, "-v", "ON_ERROR_STOP=1", "-Atc", statement]
        let output = Pipe()
        let errors = Pipe()
        psql.standardOutput = output
        psql.standardError = errors
        try psql.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        psql.waitUntilExit()
        guard psql.terminationStatus == 0 else { throw TestFailure("psql '\(statement)': \(problem)") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Where a test keeps its workouts: one test, run on each backend, expects the same results.
public enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres
    public var testDescription: String { rawValue }

    /// SQLite always; PostgreSQL when the test server is there, or under CI (where its absence fails).
    public static var available: [Backend] { TestPostgres.available ? [.sqlite, .postgres] : [.sqlite] }
}

/// The real device recordings: `../shared/data` next to the repository (CI has it), or
/// `$WORKOUT_SHARED_DATA`.
public enum SharedData {
    public static let directory: String = {
        if let path = ProcessInfo.processInfo.environment["WORKOUT_SHARED_DATA"], !path.isEmpty { return path }
        return repository.deletingLastPathComponent().appendingPathComponent("shared/data").path
    }()

    /// The repository's root folder.
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `fit/<name>.fit` of the shared recordings.
    public static func fitPath(_ name: String) -> String { directory + "/fit/" + name + ".fit" }

    /// The bytes of `fit/<name>.fit`; throws `MissingData` naming the file when it is not there.
    public static func data(_ name: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: fitPath(name)) else {
            throw MissingData(path: fitPath(name))
        }
        return data
    }

    /// The device's own values for a file, as garmin-fit-sdk decoded them (`expected/<name>.json`).
    public static func expected(_ name: String) throws -> [String: Any] {
        let path = directory + "/expected/" + name + ".json"
        guard let data = FileManager.default.contents(atPath: path),
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw MissingData(path: path) }
        return object
    }

    public struct MissingData: Error, CustomStringConvertible {
        public var path: String
        public var description: String {
            "\(path) is missing: the tests read the real recordings from ../shared/data next to the repository "
                + "(or $WORKOUT_SHARED_DATA)"
        }
    }
}

/// The date `seconds` after the tests' fixed origin (2026-05-09 06:13:20 UTC, reference date + 800,000,000 s):
/// synthetic samples are dated from it, so a run does not depend on the clock.
public func t(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: 800_000_000 + seconds) }

/// A new folder under the system's temporary folder, named `<prefix>-<random>`; the caller removes it.
public func temporaryFolder(_ prefix: String = "workout-test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The executables the package builds (`workout`, `watch-sim`, `SerialProbe`), next to the test bundle.
public enum BuiltProducts {
    /// The folder holding the built executable `name`: the test bundle's folder or one above it.
    public static func folder(holding name: String) -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path),
            directory.pathComponents.count > 1
        {
            directory.deleteLastPathComponent()
        }
        return directory
    }

    /// The built executable `name` (it may not exist when the package was not built: running it fails).
    public static func executable(_ name: String) -> URL { folder(holding: name).appendingPathComponent(name) }
}

/// Checks `condition` every `interval` until it holds (true) or `seconds` have passed (false).
///
/// For a condition another thread or process makes true; blocks the calling thread between checks.
public func waitFor(_ seconds: Double, every interval: TimeInterval = 0.05, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        Thread.sleep(forTimeInterval: interval)
    }
    return true
}

/// Checks `condition` every `interval` until it holds (true) or `seconds` have passed (false), without
/// blocking a thread of the cooperative pool (an in-process server may need it to make the condition true).
public func waitUntil(
    _ seconds: Double, every interval: Duration = .milliseconds(50), _ condition: () async -> Bool
) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !(await condition()) {
        if Date() > deadline { return false }
        try? await Task.sleep(for: interval)
    }
    return true
}

/// Runs `work` on a thread of its own and returns its result once it is done.
///
/// For blocking calls in an async test (a socket's `recv`, `send` or `connect`, waiting for a process, a
/// `Thread.sleep` pace): on Swift's cooperative pool, one thread per core, they would take a thread from the
/// in-process servers of every other suite running beside it.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// ``onOwnThread(_:)`` for work that cannot fail.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// SplitMix64: a random number generator that gives the same numbers from the same seed on every run and
/// platform, for tests that shuffle or generate input and must fail the same way each time.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
