import Foundation
import WorkoutModel

/// A race or session to simulate, as a Codable JSON document (see `Scenarios/*.json`).
///
/// A scenario is a list of legs; each leg a list of segments with a distance or a duration and an
/// intensity (0 = rest, 1 = all out: the fraction of heart-rate reserve the athlete works at).
/// Swimming segments in a pool are whole lengths, with a stroke style and a kind (active, drill,
/// rest). Everything else (speeds, cadences, power, strokes) follows from the athlete.
public struct Scenario: Codable, Sendable, Hashable {
    public var name: String
    public var summary: String
    /// The workout's type: swimBikeRun for triathlons, else the single sport.
    public var activityType: WorkoutActivityType
    public var swimmingLocation: SwimmingLocationType?
    /// Pool length in metres (pool swims).
    public var lapLength: Double?
    public var athlete: Athlete
    public var legs: [Leg]
    /// Seconds of heart rate recorded after the finish (recovery), at least 120 by default.
    public var recoverySeconds: Int?
    /// Per-second heart-rate noise (standard deviation, bpm); 0 for none.
    public var heartRateNoise: Double?
    /// Sensor dropouts: no samples from that sensor for that span of race time.
    public var dropouts: [Dropout]?
    /// Port disconnects: the whole port (every sensor on it) is gone for that span; `watch-sim`
    /// closes its pseudo-terminal and opens a new one when it comes back.
    public var disconnects: [Disconnect]?

    public struct Athlete: Codable, Sendable, Hashable {
        public var restingHeartRate: Double
        public var maxHeartRate: Double
        /// Seconds for heart rate to cover 63 % of a step change during exercise.
        public var heartRateTimeConstant: Double
        /// Seconds for heart rate to cover 63 % of its fall to rest after the finish.
        public var recoveryTimeConstant: Double
        /// Pace per 100 m swum at intensity 0.7, seconds.
        public var swimPace100m: Double
        /// Cycling speed at intensity 0.7, m/s.
        public var cyclingSpeed: Double
        /// Functional threshold power, W (power at intensity 0.9).
        public var thresholdPower: Double
        /// Running pace per km at intensity 0.7, seconds.
        public var runPaceKm: Double
    }

    public struct Leg: Codable, Sendable, Hashable {
        public var type: WorkoutActivityType
        public var segments: [Segment]

        public init(type: WorkoutActivityType, segments: [Segment]) {
            self.type = type
            self.segments = segments
        }
    }

    public struct Segment: Codable, Sendable, Hashable {
        /// Metres; for pool swims a whole number of lengths.
        public var distance: Double?
        /// Seconds (used when there is no distance, and for rests).
        public var duration: Double?
        public var intensity: Double
        public var style: StrokeStyle?
        public var kind: SegmentKind?

        public init(
            distance: Double? = nil, duration: Double? = nil, intensity: Double, style: StrokeStyle? = nil,
            kind: SegmentKind? = nil
        ) {
            self.distance = distance
            self.duration = duration
            self.intensity = intensity
            self.style = style
            self.kind = kind
        }
    }

    public enum StrokeStyle: String, Codable, Sendable, Hashable, CaseIterable {
        case freestyle, backstroke, breaststroke, butterfly, mixed
    }

    public enum SegmentKind: String, Codable, Sendable, Hashable {
        case active, drill, rest
        /// Standing still on the bike or the run (a red light): speed, cadence and power 0, sensors
        /// still reporting. Needs a duration.
        case stop
    }

    public struct Disconnect: Codable, Sendable, Hashable {
        public var port: WirePort
        /// Race seconds from the start.
        public var start: Double
        public var duration: Double

        public init(port: WirePort, start: Double, duration: Double) {
            self.port = port
            self.start = start
            self.duration = duration
        }
    }

    public struct Dropout: Codable, Sendable, Hashable {
        public enum Sensor: String, Codable, Sendable, Hashable { case heartRate, bike, footPod, gps }
        public var sensor: Sensor
        /// Race seconds from the start.
        public var start: Double
        public var duration: Double

        public init(sensor: Sensor, start: Double, duration: Double) {
            self.sensor = sensor
            self.start = start
            self.duration = duration
        }
    }
}

/// Why a scenario file cannot be used; names the file and the field.
public struct ScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var field: String
    public var problem: String

    public var description: String { "\(file): \(field): \(problem)" }
}

extension Scenario {
    /// Names of the scenarios shipped with the simulator.
    public static var builtInNames: [String] {
        guard let folder = scenarioFolder,
            let files = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
        else { return [] }
        return files.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }

    /// The folder of shipped scenarios inside the module's resources.
    static var scenarioFolder: URL? { Bundle.module.resourceURL?.appendingPathComponent("Scenarios") }

    /// A shipped scenario by name (`olympic`, `sprint`, …) or a scenario file by path.
    public static func load(_ nameOrPath: String) throws(ScenarioError) -> Scenario {
        let url: URL
        if let builtIn = scenarioFolder?.appendingPathComponent(nameOrPath + ".json"),
            !nameOrPath.contains("/"), FileManager.default.fileExists(atPath: builtIn.path)
        {
            url = builtIn
        } else {
            url = URL(fileURLWithPath: nameOrPath)
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw ScenarioError(
                    file: nameOrPath, field: "-",
                    problem:
                        "no such scenario file or built-in scenario (built in: \(builtInNames.joined(separator: ", ")))"
                )
            }
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ScenarioError(file: url.path, field: "-", problem: "cannot read the file")
        }
        return try decode(data, file: url.lastPathComponent)
    }

    /// Decodes and validates a scenario; errors name the field.
    public static func decode(_ data: Data, file: String) throws(ScenarioError) -> Scenario {
        let scenario: Scenario
        do {
            scenario = try JSONDecoder().decode(Scenario.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw ScenarioError(file: file, field: path(context.codingPath + [key]), problem: "missing")
        } catch let DecodingError.typeMismatch(_, context) {
            throw ScenarioError(file: file, field: path(context.codingPath), problem: context.debugDescription)
        } catch let DecodingError.valueNotFound(_, context) {
            throw ScenarioError(file: file, field: path(context.codingPath), problem: "missing value")
        } catch let DecodingError.dataCorrupted(context) {
            throw ScenarioError(file: file, field: path(context.codingPath), problem: context.debugDescription)
        } catch {
            throw ScenarioError(file: file, field: "-", problem: "not a scenario: \(error)")
        }
        try scenario.validate(file: file)
        return scenario
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingCharacters(in: ["."])
    }

    /// Checks the values make a race that can be simulated.
    public func validate(file: String) throws(ScenarioError) {
        if let lapLength, !(lapLength.isFinite && lapLength >= 10 && lapLength <= 100) {
            throw ScenarioError(file: file, field: "lapLength", problem: "must be between 10 and 100 m")
        }
        func fail(_ field: String, _ problem: String) -> ScenarioError {
            ScenarioError(file: file, field: field, problem: problem)
        }
        let a = athlete
        guard a.restingHeartRate >= 25, a.maxHeartRate <= 230, a.restingHeartRate < a.maxHeartRate else {
            throw fail("athlete.restingHeartRate/maxHeartRate", "need 25 ≤ resting < max ≤ 230 bpm")
        }
        // Plausible human ranges: wide enough for any athlete, narrow enough that nothing overflows.
        let ranges: [(String, Double, ClosedRange<Double>, String)] = [
            ("heartRateTimeConstant", a.heartRateTimeConstant, 1...3600, "s"),
            ("recoveryTimeConstant", a.recoveryTimeConstant, 1...3600, "s"),
            ("swimPace100m", a.swimPace100m, 30...1200, "s per 100 m"),
            ("cyclingSpeed", a.cyclingSpeed, 1...40, "m/s"),
            ("thresholdPower", a.thresholdPower, 20...3000, "W"),
            ("runPaceKm", a.runPaceKm, 100...3600, "s per km"),
        ]
        for (field, value, range, unit) in ranges where !(value.isFinite && range.contains(value)) {
            throw fail("athlete.\(field)", "must be between \(range.lowerBound) and \(range.upperBound) \(unit)")
        }
        guard !legs.isEmpty, legs.count <= 50 else { throw fail("legs", "between 1 and 50 legs are needed") }
        if activityType == .swimBikeRun {
            let expected: [WorkoutActivityType] = [.swimming, .transition, .cycling, .transition, .running]
            guard legs.map(\.type) == expected else {
                throw fail(
                    "legs", "a swimBikeRun scenario has the legs swimming, transition, cycling, transition, running")
            }
        }
        if swimmingLocation == .pool {
            guard let lapLength, lapLength.isFinite, lapLength > 0 else {
                throw fail("lapLength", "a pool swim needs a positive lap length in metres")
            }
        }
        for (l, leg) in legs.enumerated() {
            guard !leg.segments.isEmpty, leg.segments.count <= 1000 else {
                throw fail("legs[\(l)].segments", "between 1 and 1000 segments are needed")
            }
            for (s, segment) in leg.segments.enumerated() {
                let field = "legs[\(l)].segments[\(s)]"
                guard segment.intensity.isFinite, (0...1).contains(segment.intensity) else {
                    throw fail("\(field).intensity", "must be between 0 and 1")
                }
                if let distance = segment.distance, !(distance.isFinite && distance > 0 && distance <= 1_000_000) {
                    throw fail("\(field).distance", "must be more than 0 and at most 1,000,000 m")
                }
                if let duration = segment.duration, !(duration.isFinite && duration > 0 && duration <= 172_800) {
                    throw fail("\(field).duration", "must be more than 0 and at most 172,800 s (48 h)")
                }
                if segment.kind == .stop {
                    guard segment.duration != nil else { throw fail("\(field).duration", "a stop needs a duration") }
                    guard leg.type != .swimming, leg.type != .transition else {
                        throw fail("\(field).kind", "a stop belongs to a cycling or running leg (swims rest instead)")
                    }
                } else if segment.kind == .rest {
                    guard segment.duration != nil else { throw fail("\(field).duration", "a rest needs a duration") }
                } else if segment.distance == nil, segment.duration == nil {
                    throw fail(field, "needs a distance (m) or a duration (s)")
                }
                if leg.type == .swimming, swimmingLocation == .pool, segment.kind != .rest, let lapLength {
                    guard let distance = segment.distance else {
                        throw fail("\(field).distance", "pool segments are whole lengths of \(lapLength) m")
                    }
                    let lengths = distance / lapLength
                    guard abs(lengths - lengths.rounded()) < 1e-6 else {
                        throw fail("\(field).distance", "pool segments are whole lengths of \(lapLength) m")
                    }
                }
            }
        }
        for (d, dropout) in (dropouts ?? []).enumerated() where !(dropout.start >= 0 && dropout.duration > 0) {
            throw fail("dropouts[\(d)]", "needs start ≥ 0 and a positive duration")
        }
        for (d, gap) in (disconnects ?? []).enumerated() where !(gap.start >= 0 && gap.duration > 0) {
            throw fail("disconnects[\(d)]", "needs start ≥ 0 and a positive duration")
        }
        if let recoverySeconds, !(120...86_400).contains(recoverySeconds) {
            throw fail("recoverySeconds", "must be between 120 (two minutes of recovery) and 86,400")
        }
        if let heartRateNoise, !(heartRateNoise >= 0 && heartRateNoise.isFinite) {
            throw fail("heartRateNoise", "must be ≥ 0")
        }
    }

    /// The workout configuration the scenario records with.
    public var configuration: WorkoutConfiguration {
        WorkoutConfiguration(
            activityType: activityType,
            locationType: swimmingLocation == .pool && activityType == .swimming ? .indoor : .outdoor,
            swimmingLocationType: swimmingLocation ?? .unknown, lapLength: lapLength.map { Quantity($0, .meter) })
    }
}
