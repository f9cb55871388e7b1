import Foundation
import Testing

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
