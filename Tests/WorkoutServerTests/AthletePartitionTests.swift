import Foundation
import Testing
import WorkoutServer
import WorkoutStorePostgres

/// On PostgreSQL an athlete's partitions are made when the athlete is added, before its first request.
@Suite("athlete partitions on PostgreSQL", .serialized)
struct AthletePartitionTests {
    @Test(.enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func anAthleteAddedHasItsPartitionsBeforeItsFirstRequest() async throws {
        let url = try TestPostgres.freshDatabase()
        let server = try await TestServer.start(backend: .postgres, postgresURL: url)
        defer { server.remove() }
        let (athlete, token) = try server.directory.addAthlete(name: "cal")
        let id = athlete.id.uuidString.lowercased()
        let workouts = PostgresSchema.partition("workout", athlete: athlete.id)
        let journal = PostgresSchema.partition("journal_session", athlete: athlete.id)
        let found = try TestPostgres.psql(
            url,
            "SELECT (SELECT count(*) FROM athlete_partition WHERE athlete = '\(id)') || ' ' || "
                + "(to_regclass('\(workouts)') IS NOT NULL) || ' ' || (to_regclass('\(journal)') IS NOT NULL)")
        #expect(found == "1 true true", "the athlete's partitions after `athletes add`: \(found)")
        // The server finds them (its first live session opens without creating anything).
        let opened = try await server.json("PUT", "/v1/sessions/\(UUID().uuidString)", token: token, ["activityType": "running"])
        #expect(opened.status == 201, "\(opened.text)")
        await server.stop()
    }
}
