import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

@Suite("Store: save, read, query")
struct StoreTests {
    @Test(arguments: Backend.available) func saveThenReadBackEqual(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 120, heartRate: 140, maxHeartRate: 171),
            LegPlan(type: .running, seconds: 60, heartRate: 150, maxHeartRate: 160),
        ])
        let route = [RoutePoint(date: t(1), latitude: 48.1, longitude: 11.5, altitude: 520, speed: 8)]
        try store.save(workout, samples: samples, route: route)
        #expect(try store.workout(id: workout.id) == workout)
        #expect(try store.samples(workout: workout.id) == samples)
        #expect(try store.route(workout: workout.id) == route)
        #expect(throws: StoreError.workoutExists(workout.id)) { try store.save(workout) }
    }

    @Test(arguments: Backend.available) func sampleQueryByTypeDatesSourceAndLimit(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 100, heartRate: 140, maxHeartRate: 150)
        ])
        try store.save(workout, samples: samples)
        let heartRate = try store.samples(matching: SampleQuery(type: .heartRate))
        #expect(heartRate.count == 100)
        // Distance samples span [t, t+1): overlap with [10, 20) takes 9...19 (10 samples: 9 ends at 10 ≥ 10).
        let overlapping = try store.samples(
            matching: SampleQuery(type: .distanceCycling, dates: DateRange(start: t(10), end: t(20))))
        #expect(overlapping.map(\.start) == (9..<20).map { t(Double($0)) })
        let strictStart = try store.samples(
            matching: SampleQuery(
                type: .distanceCycling, dates: DateRange(start: t(10), end: t(20), options: .strictStartDate)))
        #expect(strictStart.map(\.start) == (10..<20).map { t(Double($0)) })
        let strictEnd = try store.samples(
            matching: SampleQuery(
                type: .distanceCycling, dates: DateRange(start: t(10), end: t(20), options: .strictEndDate)))
        #expect(strictEnd.map(\.end) == (11...20).map { t(Double($0)) })
        let bySource = try store.samples(matching: SampleQuery(source: bike))
        #expect(bySource.count == 100 && bySource.allSatisfy { $0.type == .distanceCycling })
        let newest = try store.samples(matching: SampleQuery(type: .heartRate, ascending: false, limit: 3))
        #expect(newest.map(\.start) == [t(99), t(98), t(97)])
        #expect(try store.samples(matching: SampleQuery(workout: UUID())).isEmpty)
    }

    @Test(arguments: Backend.available) func activityPredicateConditionsApplyToTheSameActivity(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Bike leg: average 140, run leg: max 180. No single activity has both avg > 150 and max > 170.
        let (split, splitSamples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 60, heartRate: 140, maxHeartRate: 150),
            LegPlan(type: .running, seconds: 60, heartRate: 145, maxHeartRate: 180),
        ])
        let (hard, hardSamples) = try recordWorkout(
            [LegPlan(type: .cycling, seconds: 60, heartRate: 155, maxHeartRate: 175)], startingAt: 10_000)
        try store.save(split, samples: splitSamples)
        try store.save(hard, samples: hardSamples)
        let bpm = QuantityUnit.countPerMinute
        let both = WorkoutQuery(activities: [
            ActivityPredicate(conditions: [
                StatisticCondition(.heartRate, .average, .greaterThan, Quantity(150, bpm)),
                StatisticCondition(.heartRate, .maximum, .greaterThan, Quantity(170, bpm)),
            ])
        ])
        #expect(try store.workoutIDs(matching: both) == [hard.id])
        // As two predicates (any activities), the split workout matches too.
        let separate = WorkoutQuery(activities: [
            ActivityPredicate(conditions: [StatisticCondition(.heartRate, .average, .greaterThan, Quantity(139, bpm))]),
            ActivityPredicate(conditions: [StatisticCondition(.heartRate, .maximum, .greaterThan, Quantity(170, bpm))]),
        ])
        #expect(Set(try store.workoutIDs(matching: separate)) == [split.id, hard.id])
        let cyclingOver150 = WorkoutQuery(activities: [
            ActivityPredicate(
                activityType: .cycling,
                conditions: [StatisticCondition(.heartRate, .average, .greaterThan, Quantity(2.5, .hertz))])
        ])
        #expect(try store.workouts(matching: cyclingOver150).map(\.id) == [hard.id])
        // The index-only path (activity predicates alone) and the general path agree, order included.
        for query in [both, separate, cyclingOver150] {
            var general = query
            general.minimumDuration = 0
            #expect(try store.workoutIDs(matching: query) == store.workoutIDs(matching: general))
            var oldestFirst = query
            oldestFirst.ascending = true
            general.ascending = true
            #expect(try store.workoutIDs(matching: oldestFirst) == store.workoutIDs(matching: general))
        }
        var one = separate
        one.limit = 1
        #expect(try store.workoutIDs(matching: one) == [hard.id], "newest first, then the limit")
        #expect(throws: StoreError.self) {
            try store.workoutIDs(
                matching: WorkoutQuery(activities: [
                    ActivityPredicate(conditions: [
                        StatisticCondition(.heartRate, .average, .greaterThan, Quantity(5, .meter))
                    ])
                ]))
        }
    }

    @Test(arguments: Backend.available) func workoutQueryByTypeDurationAndDates(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (short, _) = try recordWorkout(
            [LegPlan(type: .running, seconds: 600, heartRate: 140, maxHeartRate: 150)], workoutType: .running)
        let (long, _) = try recordWorkout(
            [LegPlan(type: .running, seconds: 3600, heartRate: 140, maxHeartRate: 150)], startingAt: 86_400,
            workoutType: .running)
        let (ride, _) = try recordWorkout(
            [LegPlan(type: .cycling, seconds: 3600, heartRate: 140, maxHeartRate: 150)], startingAt: 2 * 86_400,
            workoutType: .cycling)
        for workout in [short, long, ride] { try store.save(workout) }
        #expect(try store.workoutIDs(matching: WorkoutQuery(activityType: .running)) == [long.id, short.id])
        #expect(
            try store.workoutIDs(matching: WorkoutQuery(activityType: .running, minimumDuration: 1800)) == [long.id])
        #expect(
            try store.workoutIDs(matching: WorkoutQuery(dates: DateRange(start: t(80_000), end: t(100_000)))) == [
                long.id
            ])
        #expect(try store.workoutIDs(matching: WorkoutQuery(ascending: true, limit: 2)) == [short.id, long.id])
        // A single-sport workout has no explicit activities, yet matches an activity predicate.
        let rides = WorkoutQuery(activities: [ActivityPredicate(activityType: .cycling)])
        #expect(try store.workoutIDs(matching: rides) == [ride.id])
        #expect(try store.workout(id: ride.id)?.activities == ride.activities)
    }

    @Test(arguments: Backend.available) func anchoredQueryAcrossADelete(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, _) = try recordWorkout([LegPlan(type: .running, seconds: 60, heartRate: 140, maxHeartRate: 150)])
        let (b, _) = try recordWorkout(
            [LegPlan(type: .running, seconds: 60, heartRate: 140, maxHeartRate: 150)], startingAt: 1000)
        let (c, _) = try recordWorkout(
            [LegPlan(type: .running, seconds: 60, heartRate: 140, maxHeartRate: 150)], startingAt: 2000)
        try store.save(a)
        try store.save(b)
        let first = try store.anchoredWorkouts()
        #expect(first.added.map(\.id) == [a.id, b.id])
        #expect(first.deleted.isEmpty)
        // The anchor is persistable.
        let anchor = try JSONDecoder().decode(QueryAnchor.self, from: JSONEncoder().encode(first.anchor))
        try store.delete(workout: a.id)
        try store.save(c)
        let second = try store.anchoredWorkouts(since: anchor)
        #expect(second.added.map(\.id) == [c.id])
        #expect(second.deleted == [a.id])
        let limited = try store.anchoredWorkouts(since: anchor, limit: 1)
        #expect(limited.deleted == [a.id] && limited.added.isEmpty)
        let rest = try store.anchoredWorkouts(since: limited.anchor)
        #expect(rest.added.map(\.id) == [c.id] && rest.deleted.isEmpty)
        #expect(try store.anchoredWorkouts(since: second.anchor).added.isEmpty)
        #expect(try store.workout(id: a.id) == nil)
        #expect(throws: StoreError.workoutNotFound(a.id)) { try store.delete(workout: a.id) }
    }

    @Test(arguments: Backend.available) func anchoredUpdatesYieldTheCurrentStateThenLiveChanges(_ backend: Backend) async throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, _) = try recordWorkout([LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)])
        let (b, _) = try recordWorkout(
            [LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)], startingAt: 500)
        try store.save(a)
        var iterator = store.anchoredWorkoutUpdates().makeAsyncIterator()
        let initial = try await iterator.next()
        #expect(initial?.added.map(\.id) == [a.id])
        try store.save(b)
        let live = try await iterator.next()
        #expect(live?.added.map(\.id) == [b.id])
        try store.delete(workout: a.id)
        let deleted = try await iterator.next()
        #expect(deleted?.deleted == [a.id] && deleted?.added.isEmpty == true)
    }

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

    @Test(arguments: Backend.available) func observerSeesAddsAndDeletes(_ backend: Backend) async throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        var changes = store.changes().makeAsyncIterator()
        let (workout, _) = try recordWorkout([LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)])
        try store.save(workout)
        try store.delete(workout: workout.id)
        #expect(await changes.next() == .added([workout.id]))
        #expect(await changes.next() == .deleted([workout.id]))
    }

    @Test func defaultLocationFollowsEnvironmentThenXDG() {
        #expect(StoreLocation.defaultPath(environment: ["WORKOUT_DB": "/x/y.sqlite", "HOME": "/h"]) == "/x/y.sqlite")
        #expect(
            StoreLocation.defaultPath(environment: ["XDG_DATA_HOME": "/data", "HOME": "/h"])
                == "/data/workout-engine/workouts.sqlite")
        #expect(
            StoreLocation.defaultPath(environment: ["HOME": "/h"]) == "/h/.local/share/workout-engine/workouts.sqlite")
    }
}

@Suite("Store: statistics collections at bucket edges and odd intervals")
struct StatisticsCollectionEdgeTests {
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

@Suite("Store: anchored workouts across a delete and a re-save")
struct AnchoredResaveTests {
    // Anchored: delete then re-save the same id.
    @Test(arguments: Backend.available) func anchoredDeleteThenResave(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, _) = try recordWorkout([LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)])
        try store.save(a)
        let anchor = try store.anchoredWorkouts().anchor
        try store.delete(workout: a.id)
        try store.save(a)
        let changes = try store.anchoredWorkouts(since: anchor)
        // The workout exists now; a consumer applying added then deleted would drop it.
        #expect(!(changes.added.map(\.id) == [a.id] && changes.deleted == [a.id]))
    }
}
