import Foundation
import WorkoutModel

/// How many imported sessions agree with the device, per check, over a set of files: the fidelity
/// figure `workout import DIR --compare` ends with.
///
/// Per session of each file: sport (the engine's activity type of the device's sport), average heart
/// rate within 1 bpm, maximum heart rate exact, distance within 0.5 % (when the device wrote one
/// above 0), elapsed and timer time within 1 s, SWOLF within 1 and active lengths exact (when the
/// device wrote them); per file, the number of sessions. A check counts only where the device wrote
/// the value.
public struct FidelitySummary: Sendable, Hashable, Codable {
    /// One check's tally.
    public struct Check: Sendable, Hashable, Codable {
        public var name: String
        public var agree = 0
        public var total = 0
        public var disagreements: [Disagreement] = []
    }

    /// A session (or file) where ours and the device's differ beyond the check's tolerance.
    public struct Disagreement: Sendable, Hashable, Codable {
        public var file: String
        /// 1-based session number; nil for a per-file check.
        public var session: Int?
        public var field: String
        public var ours: String
        public var device: String
        /// Why no import could agree, when the file holds no message supporting the device's figure
        /// (`FITComparison.notInFile`).
        public var notInFile: String?
    }

    /// Distance agrees within this fraction of the device's.
    public static let distanceTolerance = 0.005

    /// The checks in a fixed order.
    public var checks: [Check]
    /// Files compared, and files flagged as damaged (imported up to the damage).
    public var files = 0
    public var damagedFiles: [String] = []

    public static let checkNames = [
        "sessions", "sport", "avg HR", "max HR", "distance", "elapsed", "timer", "SWOLF", "active lengths",
    ]

    public init() {
        checks = Self.checkNames.map { Check(name: $0) }
    }

    /// Whether every check agrees on every session.
    public var allAgree: Bool { checks.allSatisfy { $0.agree == $0.total } }

    /// Adds one imported file: the device's sessions (`FITImportPlan.sessions`), whether the file
    /// was damaged, the workout and its comparison.
    public mutating func add(
        file: String, sessions: [FITSummary], damaged: Bool, workout: Workout, comparison: FITComparison
    ) {
        files += 1
        if damaged { damagedFiles.append(file) }
        let ourSessions = sessions.count > 1 ? workout.activities.count : 1
        record(
            "sessions", file: file, session: nil, agree: ourSessions == sessions.count,
            ours: String(ourSessions), device: String(sessions.count))
        for row in comparison.rows where row.kind == .session {
            let index = row.number - 1
            guard index >= 0, index < sessions.count else { continue }
            let deviceType = ImportPlanner.activityType(sessions[index].sport)
            let ourType: WorkoutActivityType? =
                sessions.count == 1
                ? workout.configuration.activityType
                : (index < workout.activities.count ? workout.activities[index].configuration.activityType : nil)
            record(
                "sport", file: file, session: row.number, agree: ourType == deviceType,
                ours: ourType.map { "\($0)" } ?? "-", device: "\(deviceType) (\(row.sport))")
            checkFigures(file, row, skippingMissing: false)
        }
        for figure in comparison.notInFile {
            for index in checks.indices where checks[index].name == figure.check {
                for item in checks[index].disagreements.indices
                where checks[index].disagreements[item].file == file
                    && checks[index].disagreements[item].session == figure.session
                {
                    checks[index].disagreements[item].notInFile = figure.reason
                }
            }
        }
    }

    /// Disagreements whose device figure no message of its file holds (`Disagreement.notInFile`).
    public var disagreementsNotInFile: Int {
        checks.reduce(0) { $0 + $1.disagreements.filter { $0.notInFile != nil }.count }
    }

    /// Adds one workout compared by its rows alone (a format whose file states no sessions apart from
    /// them, as an Apple Health export, where `file` names the workout): each session row's figures,
    /// checked as a FIT file's are. A figure only the file gives (ours blank: the export holds no
    /// samples to recompute it from) is not a check, since it could only agree with itself.
    public mutating func add(file: String, rows: [ComparisonRow]) {
        files += 1
        for row in rows where row.kind == .session {
            checkFigures(file, row, skippingMissing: true)
        }
    }

    /// The figure checks of one session row (avg and max HR, distance, elapsed, timer, SWOLF, active lengths).
    private mutating func checkFigures(_ file: String, _ row: ComparisonRow, skippingMissing: Bool) {
        let device = row.device
        let ours = row.ours
        func check(_ name: String, _ ours: Double?, _ device: Double, agrees: (Double) -> Bool) {
            if skippingMissing, ours == nil { return }
            self.check(name, file, row.number, ours, device, agrees: agrees)
        }
        if let value = device.averageHeartRate {
            check("avg HR", ours.averageHeartRate, value) { abs($0 - value) <= 1 }
        }
        if let value = device.maximumHeartRate {
            check("max HR", ours.maximumHeartRate, value) { abs($0 - value) < 0.5 }
        }
        if let value = device.distance, value > 0 {
            check("distance", ours.distance, value) { abs($0 - value) <= Self.distanceTolerance * value }
        }
        if let value = device.elapsed {
            check("elapsed", ours.elapsed, value) { abs($0 - value) <= 1 }
        }
        if let value = device.timerTime {
            check("timer", ours.timerTime, value) { abs($0 - value) <= 1 }
        }
        if let value = device.swolf {
            check("SWOLF", ours.swolf, value) { abs($0 - value) <= 1 }
        }
        if let value = device.activeLengths {
            // No length at all is 0 active lengths.
            check("active lengths", Double(ours.activeLengths ?? 0), Double(value)) {
                $0 == Double(value)
            }
        }
    }

    private mutating func check(
        _ name: String, _ file: String, _ session: Int, _ ours: Double?, _ device: Double, agrees: (Double) -> Bool
    ) {
        let agree = ours.map { $0.isFinite && agrees($0) } ?? false
        record(name, file: file, session: session, agree: agree, ours: Self.text(ours), device: Self.text(device))
    }

    private mutating func record(
        _ name: String, file: String, session: Int?, agree: Bool, ours: String, device: String
    ) {
        guard let index = checks.firstIndex(where: { $0.name == name }) else { return }
        checks[index].total += 1
        if agree {
            checks[index].agree += 1
        } else {
            checks[index].disagreements.append(
                Disagreement(file: file, session: session, field: name, ours: ours, device: device))
        }
    }

    static func text(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "-" }
        let rounded = (value * 100).rounded() / 100
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int(rounded)) }
        return String(rounded)
    }
}
