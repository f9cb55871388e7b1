import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore
import WorkoutTestSupport

private func freshStore() throws -> (WorkoutStore, URL) {
    let folder = try temporaryFolder("replay")
    return (try WorkoutStore(path: folder.appendingPathComponent("replay.sqlite").path), folder)
}

private func replay(_ name: String, seed: UInt64, speed: ReplaySpeed = .max) throws -> (ReplayResult, WorkoutStore, URL)
{
    let (store, folder) = try freshStore()
    let result = try RaceReplay.run(try Scenario.load(name), seed: seed, into: store, speed: speed)
    return (result, store, folder)
}

private func distance(_ statistics: [QuantityType: Statistics]) -> Double {
    [QuantityType.distanceSwimming, .distanceCycling, .distanceWalkingRunning].compactMap { statistics[$0]?.sum?.value }
        .reduce(0, +)
}

@Suite("Replay: simulated races through the live engine")
struct ReplayTests {
    @Test func sameSeedGivesTheSameWorkoutAndDifferentSeedsDiffer() throws {
        let (first, firstStore, a) = try replay("sprint", seed: 3)
        let (second, secondStore, b) = try replay("sprint", seed: 3)
        let (other, _, c) = try replay("sprint", seed: 4)
        defer { for folder in [a, b, c] { try? FileManager.default.removeItem(at: folder) } }
        #expect(first.workout == second.workout)
        #expect(try firstStore.samples(workout: first.workout.id) == secondStore.samples(workout: second.workout.id))
        #expect(try firstStore.route(workout: first.workout.id) == secondStore.route(workout: second.workout.id))
        #expect(first.truth == second.truth)
        #expect(other.workout.id != first.workout.id)
        #expect(other.workout.statistics[.heartRate] != first.workout.statistics[.heartRate])
    }

    @Test(
        "per-leg statistics agree with the ground truth",
        arguments: ["sprint", "olympic", "sprint-pool", "half"])
    func triathlonLegsMatchGroundTruth(_ name: String) throws {
        let (result, _, folder) = try replay(name, seed: 11)
        defer { try? FileManager.default.removeItem(at: folder) }
        let workout = result.workout
        let truth = result.truth
        #expect(workout.activities.count == truth.legs.count)
        #expect(workout.activities.map(\.configuration.activityType) == truth.legs.map(\.type))
        for (activity, leg) in zip(workout.activities, truth.legs) {
            // Legs are changed explicitly (the transition button): boundaries are exact.
            #expect(activity.start == leg.start, "\(name) \(leg.type) start")
            #expect(activity.end == leg.end, "\(name) \(leg.type) end")
            let heartRate = try #require(activity.statistics[.heartRate])
            #expect(
                abs(try #require(heartRate.average?.value) - (leg.averageHeartRate ?? 0)) <= 1,
                "\(name) \(leg.type) avg HR")
            #expect(heartRate.maximum?.value == leg.maxHeartRate, "\(name) \(leg.type) max HR")
            let measured = distance(activity.statistics)
            #expect(abs(measured - leg.distance) <= 0.005 * leg.distance, "\(name) \(leg.type) distance")
            if !leg.lengths.isEmpty {
                let laps = workout.events.filter { $0.type == .lap && $0.start >= leg.start && $0.end <= leg.end }
                #expect(laps.count == leg.lengths.count, "\(name) lengths")
            }
        }
        #expect(workout.end == truth.finish)
        #expect(workout.counters.totalDropped == 0)
        #expect(workout.counters.accepted == result.samplesSent)
    }

    @Test("single-sport sessions agree with the ground truth", arguments: ["pool-swim", "track-intervals"])
    func singleSportMatchesGroundTruth(_ name: String) throws {
        let (result, _, folder) = try replay(name, seed: 5)
        defer { try? FileManager.default.removeItem(at: folder) }
        let leg = try #require(result.truth.legs.first)
        let statistics = result.workout.statistics
        #expect(abs(try #require(statistics[.heartRate]?.average?.value) - (leg.averageHeartRate ?? 0)) <= 1)
        #expect(statistics[.heartRate]?.maximum?.value == leg.maxHeartRate)
        #expect(abs(distance(statistics) - leg.distance) <= 0.005 * leg.distance)
        #expect(result.workout.elapsed == leg.end.timeIntervalSince(leg.start))
        let laps = result.workout.events.filter { $0.type == .lap }
        #expect(laps.count == leg.lengths.count)
        if name == "pool-swim" {
            // 1200 m of 25 m lengths plus four rests; drills carry no stroke count.
            #expect(leg.lengths.filter { $0.kind != "rest" }.count == 1200 / 25)
            #expect(leg.lengths.filter { $0.kind == "rest" }.count == 4)
            #expect(leg.lengths.filter { $0.kind == "drill" }.allSatisfy { $0.strokes == nil })
            let strokes = leg.lengths.compactMap(\.strokes).reduce(0, +)
            #expect(statistics[.swimmingStrokeCount]?.sum?.value == Double(strokes))
        }
    }

    @Test func theTruthKnowsTheHeartRateRecovery() throws {
        let scenario = try Scenario.load("sprint")
        var simulator = WatchSimulator(scenario: scenario, seed: 2)
        var recorder = GroundTruthRecorder(scenario: scenario)
        while let second = simulator.next() { recorder.observe(second) }
        let truth = recorder.result(of: simulator)
        let reserve = truth.heartRateAtFinish - scenario.athlete.restingHeartRate
        let expected = reserve * (1 - exp(-60 / scenario.athlete.recoveryTimeConstant))
        #expect(abs(truth.heartRateRecoveryOneMinute - expected) < 1e-9)
        #expect(truth.heartRateRecoveryTwoMinutes > truth.heartRateRecoveryOneMinute)
    }

    @Test func aThousandTimesRealTimeEqualsMaxSpeed() throws {
        let (fast, _, a) = try replay("pool-swim", seed: 8, speed: .max)
        let (paced, _, b) = try replay("pool-swim", seed: 8, speed: .times(1000))
        defer { for folder in [a, b] { try? FileManager.default.removeItem(at: folder) } }
        #expect(fast.workout == paced.workout)
    }

    @Test func replayingTheSameRaceIntoOneStoreTwiceIsRefusedCleanly() throws {
        let (store, folder) = try freshStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let scenario = try Scenario.load("pool-swim")
        let first = try RaceReplay.run(scenario, seed: 1, into: store)
        #expect(throws: StoreError.workoutExists(first.workout.id)) {
            try RaceReplay.run(scenario, seed: 1, into: store)
        }
        #expect(try store.journaledSessions().isEmpty)
        // Another scenario with the same seed is another workout.
        let other = try RaceReplay.run(try Scenario.load("track-intervals"), seed: 1, into: store)
        #expect(other.workout.id != first.workout.id)
    }

    @Test func badScenarioFilesNameTheField() throws {
        let path = try #require(findScenario("olympic"))
        let valid = try #require(FileManager.default.contents(atPath: path))
        var object = try #require(try JSONSerialization.jsonObject(with: valid) as? [String: Any])
        var legs = try #require(object["legs"] as? [[String: Any]])
        var segments = try #require(legs[2]["segments"] as? [[String: Any]])
        segments[1]["intensity"] = 1.7
        legs[2]["segments"] = segments
        object["legs"] = legs
        let tooHard = try JSONSerialization.data(withJSONObject: object)
        #expect(throws: ScenarioError.self) { try Scenario.decode(tooHard, file: "x.json") }
        do {
            _ = try Scenario.decode(tooHard, file: "x.json")
        } catch {
            #expect(error.field == "legs[2].segments[1].intensity")
            #expect(error.description.hasPrefix("x.json: legs[2].segments[1].intensity"))
        }
        object.removeValue(forKey: "athlete")
        let noAthlete = try JSONSerialization.data(withJSONObject: object)
        do {
            _ = try Scenario.decode(noAthlete, file: "x.json")
            Issue.record("a scenario without an athlete was accepted")
        } catch {
            #expect(error.field == "athlete")
        }
        #expect(throws: ScenarioError.self) { try Scenario.load("no-such-race") }
        #expect(Scenario.builtInNames.contains("full") && Scenario.builtInNames.contains("ultra-24h"))
    }
}

/// The shipped scenario file in the source tree (the test runs from the package's build folder).
private func findScenario(_ name: String) -> String? {
    var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    for _ in 0..<2 { directory.deleteLastPathComponent() }
    let path = directory.appendingPathComponent("Simulators/WorkoutSimulator/Scenarios/\(name).json").path
    return FileManager.default.fileExists(atPath: path) ? path : nil
}
