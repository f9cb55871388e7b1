import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres

/// A journal commit counts as done only when PostgreSQL committed it: a failure at commit time (after the
/// statement's CommandComplete, as a deferred constraint or an immediate shutdown gives) must reach the caller.
@Suite(
    "PostgreSQL journal commits: acknowledged only once committed",
    .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct JournalCommitDurabilityTests {
    private static let strap = SourceDevice(name: "HRM", manufacturer: "Garmin", identifier: "ant:120:1")

    private static func pulses(_ range: Range<Int>) -> [QuantitySample] {
        range.map { QuantitySample(.heartRate, 120 + Double($0 % 40), at: t(Double($0)), source: strap) }
    }

    private static func storedSeqs(athlete: UUID) throws -> [Int64] {
        let url = try #require(TestPostgres.url)
        let text = try TestPostgres.psql(
            url,
            "SELECT coalesce(string_agg(seq::text, ',' ORDER BY seq), '') FROM journal_change "
                + "WHERE athlete = '\(athlete.uuidString.lowercased())'")
        return text.split(separator: ",").compactMap { Int64($0) }
    }

    @Test("a commit that fails at commit time throws, and committing again loses nothing")
    func commitTimeFailureReachesTheCaller() throws {
        let fixture = try StoreFixture(.postgres)
        defer { fixture.cleanup() }
        let recording = try fixture.store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(0)), commitInterval: 0)
        try recording.session.start(at: t(0))
        try recording.builder.add(Self.pulses(0..<10))
        try recording.commit()
        try recording.builder.add(Self.pulses(10..<20))
        try recording.commit()
        let before = try Self.storedSeqs(athlete: fixture.athlete)
        #expect(before == Array(0..<Int64(before.count)), "the journal is contiguous before the failure")
        let next = Int64(before.count)

        // The next commit's first change fails when its transaction commits.
        let removeTrigger = try failJournalInsert(athlete: fixture.athlete, seq: next, deferred: true)
        try recording.builder.add(Self.pulses(20..<30))
        #expect(throws: StoreError.self, "a transaction PostgreSQL did not commit is not a commit") {
            try recording.commit()
        }
        try TestPostgres.psql(try #require(TestPostgres.url), removeTrigger)
        #expect(try Self.storedSeqs(athlete: fixture.athlete) == before, "the failed commit wrote nothing")

        // The failed commit's changes are written with the next one: the journal stays contiguous and whole.
        try recording.builder.add(Self.pulses(30..<40))
        try recording.commit()
        let after = try Self.storedSeqs(athlete: fixture.athlete)
        #expect(after == Array(0..<Int64(after.count)), "no gap in the journal: \(after)")
        let recovered = try #require(try fixture.reopen().recoverActiveSession(id: recording.id, commitInterval: 0))
        let samples = try recovered.committedSamples()
        #expect(samples.map(\.start) == Self.pulses(0..<40).map(\.start), "every sample once, in order")
    }
}
