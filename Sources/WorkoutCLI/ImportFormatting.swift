import Foundation
import WorkoutFormats

extension Format {
    /// The comparison table: a row per session and lap, each cell `ours/device` (`-` when unknown).
    static func comparison(_ comparison: [ComparisonRow]) -> [String] {
        let swims = comparison.contains { $0.ours.swimmingHeartRate != nil || $0.device.swimmingHeartRate != nil }
        var header = [
            "", "SPORT", "AVG HR", "MAX HR", "DISTANCE", "ELAPSED", "TIMER", "LENGTHS", "ACTIVE", "STROKES", "SWOLF",
        ]
        if swims { header.append("SWIM HR") }
        var rows = [header]
        for row in comparison {
            let ours = row.ours
            let device = row.device
            var cells = [
                (row.kind == .session ? "session " : "lap ") + "\(row.number)", row.sport,
                pair(ours.averageHeartRate, device.averageHeartRate, decimals: 1),
                pair(ours.maximumHeartRate, device.maximumHeartRate, decimals: 0),
                pair(ours.distance, device.distance, decimals: 1),
                pair(ours.elapsed, device.elapsed, decimals: 1), pair(ours.timerTime, device.timerTime, decimals: 1),
                pair(ours.lengths.map(Double.init), device.lengths.map(Double.init), decimals: 0),
                pair(ours.activeLengths.map(Double.init), device.activeLengths.map(Double.init), decimals: 0),
                pair(ours.strokes, device.strokes, decimals: 0), pair(ours.swolf, device.swolf, decimals: 1),
            ]
            if swims { cells.append(pair(ours.swimmingHeartRate, device.swimmingHeartRate, decimals: 1)) }
            rows.append(cells)
        }
        return ["ours/device (heart rate bpm, distance m, times s)"] + table(rows, rightAligned: Set(2..<header.count))
    }

    /// The fidelity summary: per check, sessions agreeing out of those the device gave a value for,
    /// then every disagreement (file, session, field, ours and the device's).
    static func fidelity(_ summary: FidelitySummary) -> [String] {
        var rows = [["CHECK", "AGREE", "OF", "FILES THAT DISAGREE"]]
        for check in summary.checks {
            let files = Set(check.disagreements.map(\.file)).count
            rows.append([check.name, String(check.agree), String(check.total), files == 0 ? "" : String(files)])
        }
        var lines = ["agreement with the device over \(summary.files) files (per session)"]
        lines += table(rows, rightAligned: [1, 2, 3])
        let disagreements = summary.checks.flatMap(\.disagreements)
        if !disagreements.isEmpty {
            lines.append("disagreements (ours/device):")
            for item in disagreements {
                let session = item.session.map { " session \($0)" } ?? ""
                lines.append("  \(item.file)\(session): \(item.field) \(item.ours)/\(item.device)")
                if let reason = item.notInFile { lines.append("    not in the file: \(reason)") }
            }
            let notInFile = summary.disagreementsNotInFile
            if notInFile > 0 {
                lines.append(
                    "\(notInFile) of the \(disagreements.count) disagreements are device figures no message of the file "
                        + "holds (docs/device-conventions-round2.md)")
            }
        }
        if !summary.damagedFiles.isEmpty {
            lines.append("damaged files (imported up to the damage): " + summary.damagedFiles.joined(separator: ", "))
        }
        return lines
    }

    private static func pair(_ ours: Double?, _ device: Double?, decimals: Int) -> String {
        if ours == nil, device == nil { return "" }
        func text(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "-" }
            return String(format: "%.\(decimals)f", value)
        }
        return text(ours) + "/" + text(device)
    }
}
