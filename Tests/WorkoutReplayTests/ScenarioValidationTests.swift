import Foundation
import Testing
import WorkoutModel
import WorkoutReplay
import WorkoutStore

@testable import WorkoutSensors
@testable import WorkoutSimulator

/// Which scenarios validate: a scenario that would make the simulator crash, run backwards or never end is
/// refused, and one a real pool allows is accepted.
@Suite("Simulator: scenario validation")
struct ScenarioValidationTests {
    /// A scenario that validates must not crash the simulator or the encoders.
    @Test func hugePowerInAScenarioIsRejectedOrSurvives() async throws {
        await #expect(processExitsWith: .success) {
            let athlete = athleteJSON.replacingOccurrences(of: "\"thresholdPower\": 260", with: "\"thresholdPower\": 1e20")
            precondition(athlete.contains("1e20"))
            let json = """
                {"name":"p","summary":"","activityType":"cycling",\(athlete),"recoverySeconds": 120,
                 "legs":[{"type":"cycling","segments":[{"duration":3,"intensity":0.7}]}]}
                """
            guard let s = try? Scenario.decode(Data(json.utf8), file: "p.json") else { return }  // rejected: fine
            var simulator = WatchSimulator(scenario: s, seed: 1)
            var emitter = WireEmitter(start: simulator.start)
            while let second = simulator.next() { _ = emitter.encode(second) }
        }
    }

    @Test func hugeRecoverySecondsIsRejectedOrSurvives() async throws {
        await #expect(processExitsWith: .success) {
            let athlete = athleteJSON
            let json = """
                {"name":"p","summary":"","activityType":"running",\(athlete),"recoverySeconds":9223372036854775807,
                 "legs":[{"type":"running","segments":[{"duration":2,"intensity":0.7}]}]}
                """
            guard let s = try? Scenario.decode(Data(json.utf8), file: "p.json") else { return }
            var simulator = WatchSimulator(scenario: s, seed: 1)
            for _ in 0..<5 { _ = simulator.next() }
        }
    }

    /// A negative distance (with a duration so the segment validates) makes the athlete go backwards.
    @Test func negativeSegmentDistanceIsRejected() throws {
        #expect(throws: ScenarioError.self) {
            try scenario(
                """
                "activityType": "running", \(athleteJSON),
                "legs": [{"type": "running", "segments": [{"distance": -500, "duration": 60, "intensity": 0.7}]}]
                """)
        }
    }

    /// Huge durations validate and then the simulator never finishes in practice.
    @Test func absurdDurationIsRejected() throws {
        #expect(throws: ScenarioError.self) {
            try scenario(
                """
                "activityType": "running", \(athleteJSON),
                "legs": [{"type": "running", "segments": [{"duration": 1e18, "intensity": 0.7}]}]
                """)
        }
    }

    /// A 25-yard pool: 14 lengths = 320.04 m is a whole number of lengths.
    @Test func yardPoolWholeLengthsAreAccepted() throws {
        _ = try scenario(
            """
            "activityType": "swimming", "swimmingLocation": "pool", "lapLength": 22.86, \(athleteJSON),
            "legs": [{"type": "swimming", "segments": [{"distance": 320.04, "intensity": 0.7}]}]
            """)
    }

    /// A pool rest given as a distance (no duration) validates but lasts one second.
    @Test func restWithoutDurationIsRejected() throws {
        #expect(throws: ScenarioError.self) {
            try scenario(
                """
                "activityType": "swimming", "swimmingLocation": "pool", "lapLength": 25, \(athleteJSON),
                "legs": [{"type": "swimming", "segments": [{"distance": 50, "intensity": 0.7},
                  {"distance": 50, "intensity": 0.2, "kind": "rest"}, {"distance": 50, "intensity": 0.7}]}]
                """)
        }
    }
}
