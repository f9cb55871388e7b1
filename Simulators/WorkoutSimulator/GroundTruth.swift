import Foundation
import WorkoutModel

/// What really happened in a simulated race, written beside each replay and used by tests.
public struct GroundTruth: Codable, Sendable, Hashable {
    public var scenario: String
    public var seed: UInt64
    public var start: Date
    /// The instant the last leg ended (the end of exercise).
    public var finish: Date
    public var legs: [Leg]
    /// The model's heart rate at the finish, and one and two minutes later (noise-free).
    public var heartRateAtFinish: Double
    public var heartRateRecoveryOneMinute: Double
    public var heartRateRecoveryTwoMinutes: Double

    public struct Leg: Codable, Sendable, Hashable {
        public var type: WorkoutActivityType
        public var start: Date
        public var end: Date
        /// Metres the sensors reported for the leg.
        public var distance: Double
        /// Mean and maximum of the heart-rate samples sent during the leg (1 Hz, so the mean is
        /// what a time-weighted average gives when no sample is missing).
        public var averageHeartRate: Double?
        public var maxHeartRate: Double?
        public var heartRateSamples: Int
        public var lengths: [Length]
    }

    public struct Length: Codable, Sendable, Hashable {
        public var start: Date
        public var duration: TimeInterval
        public var strokes: Int?
        public var style: String?
        public var kind: String
    }
}

/// Builds the ground truth from the seconds a simulator produced, as they stream past.
public struct GroundTruthRecorder: Sendable {
    private let scenario: Scenario
    private var legs: [GroundTruth.Leg] = []
    private var heartRateSum = 0.0
    private var finish: Date?

    public init(scenario: Scenario) {
        self.scenario = scenario
    }

    public mutating func observe(_ second: SimulatedSecond) {
        guard let index = second.leg else {
            if finish == nil { finish = second.time }
            return
        }
        if index == legs.count {
            if let last = legs.indices.last { legs[last].end = second.time }
            heartRateSum = 0
            legs.append(
                GroundTruth.Leg(
                    type: scenario.legs[index].type, start: second.time, end: second.time, distance: 0,
                    heartRateSamples: 0, lengths: []))
        }
        let last = legs.count - 1
        legs[last].end = second.time.addingTimeInterval(1)
        for sample in second.samples {
            switch sample.type {
            case .distanceSwimming, .distanceCycling, .distanceWalkingRunning:
                legs[last].distance += sample.quantity.value
            case .heartRate:
                heartRateSum += sample.quantity.value
                legs[last].heartRateSamples += 1
                legs[last].averageHeartRate = heartRateSum / Double(legs[last].heartRateSamples)
                legs[last].maxHeartRate = Swift.max(legs[last].maxHeartRate ?? 0, sample.quantity.value)
            default:
                break
            }
        }
        for event in second.events where event.type == .lap {
            var strokes: Int?
            if case .int(let value) = event.metadata[SwimMetadataKey.strokes] { strokes = value }
            var style: String?
            if case .string(let value) = event.metadata[SwimMetadataKey.strokeStyle] { style = value }
            var kind = "active"
            if case .string(let value) = event.metadata[SwimMetadataKey.lengthKind] { kind = value }
            legs[last].lengths.append(
                GroundTruth.Length(
                    start: event.start, duration: event.duration, strokes: strokes, style: style, kind: kind))
        }
    }

    /// The truth once `simulator` has run to its end.
    public func result(of simulator: WatchSimulator) -> GroundTruth {
        let athlete = scenario.athlete
        let atFinish = simulator.heartRateAtFinish
        func after(_ seconds: Double) -> Double {
            WatchSimulator.recoveryHeartRate(
                atFinish: atFinish, resting: athlete.restingHeartRate, seconds: seconds,
                timeConstant: athlete.recoveryTimeConstant)
        }
        return GroundTruth(
            scenario: scenario.name, seed: simulator.seed, start: simulator.start,
            finish: finish ?? legs.last?.end ?? simulator.start, legs: legs, heartRateAtFinish: atFinish,
            heartRateRecoveryOneMinute: atFinish - after(60), heartRateRecoveryTwoMinutes: atFinish - after(120))
    }
}
