import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// Sample and workout queries: by type, dates, source, duration, activity conditions and limit.
@Suite("Store: sample and workout queries")
struct SampleAndWorkoutQueryTests {
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
}
