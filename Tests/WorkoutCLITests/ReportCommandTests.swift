import Foundation
import Testing
import WorkoutSensors
import WorkoutTestSupport

@testable import WorkoutCLI

/// `workout report` through the built executable: one self-contained page, refused input.
@Suite("workout report")
struct ReportCommandTests {
    @Test func reportWritesOneSelfContainedPage() throws {
        try withTwoRides { db, ids in
            let folder = try temporaryFolder("workout-cli")
            defer { try? FileManager.default.removeItem(at: folder) }
            let page = folder.appendingPathComponent("ride.html").path
            let result = try runCommand(["report", ids[0].uuidString, "--db", db, "--output", page])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("wrote \(page)"))
            let html = try String(contentsOfFile: page, encoding: .utf8)
            #expect(html.hasPrefix("<!DOCTYPE html>"))
            #expect(html.contains(ids[0].uuidString))
            #expect(html.contains("<svg id=\"timeline\""))
            #expect(!html.contains("src=\"http") && !html.contains("href=\"http"))
            // To standard output with `-`: the same page.
            let piped = try runCommand(["report", ids[0].uuidString, "--db", db, "-o", "-"])
            #expect(piped.stdout == html)
        }
    }

    @Test func reportOfAnUnknownWorkoutOrImpossibleHeartRatesFails() throws {
        try withTwoRides { db, _ in
            let missing = UUID()
            let unknown = try runCommand(["report", missing.uuidString, "--db", db, "-o", "-"])
            #expect(unknown.status != 0)
            #expect(unknown.stdout.isEmpty)
            #expect(unknown.stderr.contains(missing.uuidString) && unknown.stderr.contains("workout list"))
            let zones = try runCommand([
                "report", missing.uuidString, "--db", db, "--max-heart-rate", "50", "--resting-heart-rate", "60",
            ])
            #expect(zones.status != 0)
            #expect(zones.stderr.contains("maximum heart rate"))
        }
    }

    @Test func heartRatesNoHeartCanHaveAreRefusedWithoutACrash() throws {
        try withTwoRides { db, ids in
            for (maximum, resting) in [("1e300", "60"), ("100", "1e300"), ("190", "0.001"), ("400", "60")] {
                let result = try runCommand([
                    "report", ids[0].uuidString, "--db", db, "-o", "-", "--max-heart-rate", maximum,
                    "--resting-heart-rate", resting,
                ])
                #expect(
                    result.status == 64, "--max-heart-rate \(maximum) --resting-heart-rate \(resting): \(result.stderr)"
                )
                #expect(result.stderr.contains("heart rate"))
                #expect(result.stdout.isEmpty)
            }
        }
    }
}
