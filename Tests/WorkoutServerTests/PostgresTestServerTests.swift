import Foundation
import Testing

/// The throw-away PostgreSQL cluster of scripts/test.sh (scripts/test-postgres.sh).
///
/// Without WORKOUT_TEST_POSTGRES_URL the PostgreSQL tests cannot run: under CI=true that is a failure,
/// never a silent skip; elsewhere (a developer's `swift test`) they are skipped with the reason.
enum TestPostgres {
    static var url: String? {
        ProcessInfo.processInfo.environment["WORKOUT_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    /// Run the test when there is a server, or when there is none under CI (where it must fail).
    static var available: Bool { url != nil || inCI }

    /// The test cluster's streaming-replication hot standby (scripts/test-postgres.sh), its `workout_test`.
    static var replicaURL: String? {
        ProcessInfo.processInfo.environment["WORKOUT_TEST_POSTGRES_REPLICA_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
    /// Run the replica tests when there is one, or under CI (where its absence fails).
    static var replicaAvailable: Bool { replicaURL != nil || inCI }

    /// `url` naming database `name` instead of its own.
    static func url(_ url: String, database name: String) throws -> String {
        guard let slash = url.lastIndex(of: "/") else { throw TestFailure("no database in \(url)") }
        return String(url[...slash]) + name
    }

    /// A new, empty database on the test cluster (named `workout_<random>`), for a test that needs the
    /// database to itself (athlete names are unique per database); returns its URL.
    static func freshDatabase() throws -> String {
        let base = try #require(url, "CI=true but WORKOUT_TEST_POSTGRES_URL is not set: run scripts/test.sh")
        let name = "workout_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try psql(base, "CREATE DATABASE \(name)")
        guard let slash = base.lastIndex(of: "/") else { throw TestFailure("no database in \(base)") }
        return String(base[...slash]) + name
    }

    /// Runs one statement with psql on `url`; throws with psql's message when it fails.
    @discardableResult
    static func psql(_ url: String, _ statement: String) throws -> String {
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

@Suite("test PostgreSQL")
struct PostgresTestServerTests {
    @Test(.enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func theTestClusterAnswersOnLoopback() throws {
        let url = try #require(TestPostgres.url, "CI=true but WORKOUT_TEST_POSTGRES_URL is not set: scripts/test.sh starts the test PostgreSQL")
        #expect(url.hasPrefix("postgres://") && url.contains("@127.0.0.1:"))
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        psql.arguments = ["psql", url, "-Atc", "SELECT current_database() || ' ' || current_setting('listen_addresses')"]
        let output = Pipe()
        psql.standardOutput = output
        try psql.run()
        psql.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(psql.terminationStatus == 0)
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == "workout_test 127.0.0.1")
    }
}
