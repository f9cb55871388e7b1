import Foundation
import Testing
import WorkoutReport

/// The time chart of a fixed scenario and seed, compared with the committed drawing, so that an
/// unintended change in the drawing shows up in review as a diff of Snapshots/sprint-seed-3-timeline.svg.
///
/// After an intended change, rewrite it with
/// `UPDATE_REPORT_SNAPSHOTS=1 swift test --filter ReportSnapshotTests` and commit the new file.
@Suite("Report snapshots")
struct ReportSnapshotTests {
    static let snapshot = repositoryRoot.appendingPathComponent(
        "Tests/WorkoutReportTests/Snapshots/sprint-seed-3-timeline.svg")

    @Test func sprintTimelineMatchesTheCommittedSnapshot() throws {
        try withTemporaryFolder { folder in
            let input = try replayed("sprint", seed: 3, in: folder)
            let svg = WorkoutReport.timelineSVG(input) + "\n"
            if ProcessInfo.processInfo.environment["UPDATE_REPORT_SNAPSHOTS"] == "1" {
                try Data(svg.utf8).write(to: Self.snapshot)
            }
            let committed = try String(contentsOf: Self.snapshot, encoding: .utf8)
            if svg != committed {
                let ours = svg.split(separator: "\n", omittingEmptySubsequences: false)
                let theirs = committed.split(separator: "\n", omittingEmptySubsequences: false)
                let line =
                    (0..<min(ours.count, theirs.count)).first { ours[$0] != theirs[$0] }
                    ?? min(ours.count, theirs.count)
                let written = folder.deletingLastPathComponent().appendingPathComponent(
                    "sprint-seed-3-timeline.actual.svg")
                try? Data(svg.utf8).write(to: written)
                Issue.record(
                    """
                    the sprint timeline differs from \(Self.snapshot.path) from line \(line + 1) \
                    (this run's drawing: \(written.path)); if the change is intended, run \
                    UPDATE_REPORT_SNAPSHOTS=1 swift test --filter ReportSnapshotTests and commit the file
                    """)
            }
        }
    }

    @Test func theSameWorkoutDrawsTheSameReport() throws {
        try withTemporaryFolder { folder in
            let input = try replayed("sprint", seed: 3, in: folder)
            #expect(WorkoutReport.html(input) == WorkoutReport.html(input))
        }
    }
}
