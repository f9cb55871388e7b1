import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// The workout's structure the builder checks: activities inside the workout and apart, valid events, an end after the data, possible options.
@Suite("Live builder: activities, events, the end and options validated")
struct WorkoutStructureTests {
    @Test func activitiesMustNotOverlapAndMustLieInsideTheWorkout() throws {
        let (builder, _) = try collectingBuilder(.other)
        let run = WorkoutConfiguration(activityType: .running)
        try builder.addActivity(configuration: run, start: t(10), end: t(20))
        let before = builder.activities(at: t(50))
        #expect(throws: EngineError.activityOverlap(start: t(15), end: t(25), existingStart: t(10), existingEnd: t(20)))
        {
            try builder.addActivity(configuration: run, start: t(15), end: t(25))
        }
        #expect(throws: EngineError.activityOverlap(start: t(5), end: t(12), existingStart: t(10), existingEnd: t(20)))
        {
            try builder.addActivity(configuration: run, start: t(5), end: t(12))
        }
        #expect(throws: EngineError.activityOutsideWorkout(start: t(-5), end: t(5))) {
            try builder.addActivity(configuration: run, start: t(-5), end: t(5))
        }
        #expect(throws: EngineError.activityEndBeforeStart(start: t(40), end: t(30))) {
            try builder.addActivity(configuration: run, start: t(40), end: t(30))
        }
        try builder.addActivity(configuration: run, start: t(30))  // open
        #expect(throws: EngineError.activityStillOpen(start: t(30))) {
            try builder.addActivity(configuration: run, start: t(40))
        }
        try builder.addActivity(configuration: run, start: t(0), end: t(10))  // touching is fine
        try builder.endCollection(at: t(60))
        #expect(throws: EngineError.activityOutsideWorkout(start: t(61), end: t(70))) {
            try builder.addActivity(configuration: run, start: t(61), end: t(70))
        }
        let activities = builder.activities()
        #expect(activities.map(\.start) == [t(0), t(10), t(30)])
        #expect(activities.last?.end == t(60), "ending collection closes the open activity")
        #expect(before.count == 1)
    }

    @Test func eventsAreValidated() throws {
        let (builder, _) = try collectingBuilder(.swimming)
        try builder.add([WorkoutEvent(type: .lap, start: t(0), duration: 30)])
        #expect(throws: EngineError.overlappingLap(start: t(20), end: t(50))) {
            try builder.add([WorkoutEvent(type: .lap, start: t(20), duration: 30)])
        }
        #expect(throws: EngineError.invalidEventDuration(.marker, duration: 3)) {
            try builder.add([WorkoutEvent(type: .marker, start: t(40), duration: 3)])
        }
        #expect(throws: EngineError.eventOutsideWorkout(.marker, start: t(-1), end: t(-1))) {
            try builder.add([WorkoutEvent(type: .marker, start: t(-1))])
        }
        // Segments may overlap each other and laps.
        try builder.add([
            WorkoutEvent(type: .segment, start: t(0), duration: 60),
            WorkoutEvent(type: .segment, start: t(10), duration: 60),
            WorkoutEvent(type: .lap, start: t(30), duration: 30),
        ])
        #expect(builder.events.count == 4)
        // All or nothing: a bad event in a batch leaves the good one out too.
        #expect(throws: EngineError.self) {
            try builder.add([
                WorkoutEvent(type: .marker, start: t(70)), WorkoutEvent(type: .lap, start: t(35), duration: 5),
            ])
        }
        #expect(builder.events.count == 4)
    }

    @Test func endingBeforeRecordedDataIsRefusedAndLosesNothing() throws {
        let (builder, _) = try collectingBuilder()
        try builder.add([hr(100, at: 0), hr(110, at: 50)])
        #expect(throws: EngineError.endBeforeRecordedData(end: t(40), latest: t(50))) {
            try builder.endCollection(at: t(40))
        }
        #expect(builder.state == .collecting)
        try builder.endCollection(at: t(60))
        #expect(builder.statistics(for: .heartRate)?.sampleCount == 2)
    }

    @Test func impossibleOptionsAreRefused() {
        #expect(throws: EngineError.self) {
            _ = try LiveWorkoutBuilder(
                configuration: WorkoutConfiguration(activityType: .running), options: BuilderOptions(holdCap: -1))
        }
        #expect(throws: EngineError.self) {
            _ = try LiveWorkoutBuilder(
                configuration: WorkoutConfiguration(activityType: .swimming, lapLength: Quantity(25, .countPerMinute)))
        }
    }
}
