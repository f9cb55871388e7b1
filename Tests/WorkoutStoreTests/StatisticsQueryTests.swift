import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// Statistics and statistics collections: empty buckets, bucket edges, odd intervals, live updates.
@Suite("Store: statistics and statistics collections")
struct StatisticsQueryTests {
    @Test(arguments: Backend.available) func statisticsAndStatisticsCollectionWithAnEmptyBucket(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Two rides an hour apart: [0, 600) and [7200, 7800); bucket [3600, 7200) is empty.
        let (first, firstSamples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 600, heartRate: 140, maxHeartRate: 140)
        ])
        let (second, secondSamples) = try recordWorkout(
            [LegPlan(type: .cycling, seconds: 600, heartRate: 160, maxHeartRate: 160)], startingAt: 7200)
        try store.save(first, samples: firstSamples)
        try store.save(second, samples: secondSamples)
        let distance = try #require(try store.statistics(.distanceCycling, from: t(100), to: t(200.5)))
        #expect(abs(try #require(distance.sum?.value) - 100.5 * 8) < 1e-6, "prorated at the edges")
        let buckets = try store.statisticsCollection(
            .heartRate, from: t(0), to: t(3 * 3600), anchor: t(0), interval: .hour)
        #expect(buckets.count == 3)
        #expect(buckets[0].statistics?.average?.value == 140)
        #expect(buckets[1].statistics == nil)
        #expect(buckets[1].start == t(3600))
        #expect(buckets[2].statistics?.average?.value == 160)
        let all = try #require(try store.statistics(.heartRate, from: t(0), to: t(8000)))
        #expect(all.sampleCount == 1200)
        #expect(all.minimum?.value == 140 && all.maximum?.value == 160)
    }

    @Test(arguments: Backend.available) func statisticsCollectionUpdatesLive(_ backend: Backend) async throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        var iterator = store.statisticsCollectionUpdates(
            .heartRate, from: t(0), to: t(7200), anchor: t(0), interval: .hour
        ).makeAsyncIterator()
        let before = try await iterator.next()
        #expect(before?.allSatisfy { $0.statistics == nil } == true)
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 60, heartRate: 150, maxHeartRate: 150)
        ])
        try store.save(workout, samples: samples)
        let after = try await iterator.next()
        #expect(after?.first?.statistics?.average?.value == 150)
    }

    // A cumulative sample ending exactly at a bucket's start makes the empty bucket non-empty.
    @Test(arguments: Backend.available) func cumulativeSampleEndingAtBucketStartFillsTheNextBucket(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 60, heartRate: 140, maxHeartRate: 140)
        ])
        try store.save(workout, samples: samples)
        // distance samples cover [0, 60); bucket [60, 120) has no data.
        let buckets = try store.statisticsCollection(
            .distanceCycling, from: t(0), to: t(120), anchor: t(0), interval: .minute)
        #expect(buckets.count == 2)
        #expect(buckets[0].statistics?.sampleCount == 60)
        #expect(buckets[1].statistics == nil, "got \(String(describing: buckets[1].statistics))")
        #expect(try store.statistics(.distanceCycling, from: t(60), to: t(120)) == nil)
    }

    // Crashes reachable from statisticsCollection input. SQLite only: the arithmetic is the store's, the
    // same for both backends, and each case runs in a child process (an empty store).
    @Test func tinyIntervalDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            guard let folder = try? temporaryFolder(),
                let store = try? WorkoutStore(path: folder.appendingPathComponent("x.sqlite").path)
            else { return }
            _ = try? store.statisticsCollection(
                .heartRate, from: t(0), to: t(10), anchor: t(0), interval: .seconds(Double.leastNonzeroMagnitude))
        }
    }

    @Test func nanAnchorDoesNotCrash() async {
        await #expect(processExitsWith: .success) {
            guard let folder = try? temporaryFolder(),
                let store = try? WorkoutStore(path: folder.appendingPathComponent("x.sqlite").path)
            else { return }
            _ = try? store.statisticsCollection(
                .heartRate, from: t(0), to: t(10), anchor: Date(timeIntervalSinceReferenceDate: .nan), interval: .minute
            )
        }
    }
}
