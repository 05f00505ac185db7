//! Hot reload over stdio: a skill folder moved into a watched root, edited, and removed is
//! picked up without a restart, with `resources/list_changed` sent each time; so is a folder
//! made and filled at once.

use std::time::Duration;

use serde_json::json;

use super::search;
use crate::common::{Client, Elicitation, TestClient, spawn_binary, write_skill};

/// Polls until the search for `query` does (or does not) rank `name` first, or fails after
/// five seconds.
async fn wait_for_search(client: &Client, query: &str, name: &str, found: bool) {
    for _ in 0..100 {
        let hits = search(client, json!({"query": query})).await;
        if hits.first().is_some_and(|first| first == name) == found {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "`{query}` never {} `{name}`",
        if found { "found" } else { "lost" }
    );
}

#[tokio::test]
async fn skills_added_edited_and_removed_on_disk_are_served_without_a_restart() {
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path().join("skills");
    write_skill(
        &root,
        "existing",
        "Already there. Use when testing.",
        "Body.",
    );
    let args = [
        "--skills".to_owned(),
        root.display().to_string(),
        "--data-dir".to_owned(),
        directory.path().join("data").display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let observer = TestClient::new(Elicitation::Unsupported);
    let client = spawn_binary(&args, observer.clone()).await;
    wait_for_search(&client, "already there", "existing", true).await;
    // Give the watcher time to settle the start-up scan's own `index.json` write.
    tokio::time::sleep(Duration::from_millis(400)).await;

    let before = observer.count("resources/list_changed");
    let staging = write_skill(
        &directory.path().join("staging"),
        "telescope-care",
        "Clean and align telescope mirrors. Use when stargazing.",
        "# Mirrors",
    );
    std::fs::rename(&staging, root.join("telescope-care")).unwrap();
    observer
        .wait_for_more("resources/list_changed", before)
        .await;
    wait_for_search(&client, "telescope mirrors", "telescope-care", true).await;

    let before = observer.count("resources/list_changed");
    write_skill(
        &root,
        "telescope-care",
        "Polish binocular lenses. Use when birdwatching.",
        "# Lenses",
    );
    observer
        .wait_for_more("resources/list_changed", before)
        .await;
    wait_for_search(&client, "binocular lenses", "telescope-care", true).await;

    let before = observer.count("resources/list_changed");
    std::fs::remove_dir_all(root.join("telescope-care")).unwrap();
    observer
        .wait_for_more("resources/list_changed", before)
        .await;
    wait_for_search(&client, "binocular lenses", "telescope-care", false).await;

    // A folder made and filled at once: inotify may miss the files, the settling rescan not.
    let quick = root.join("quick-skill/references/deeper");
    std::fs::create_dir_all(&quick).unwrap();
    write_skill(
        &root,
        "quick-skill",
        "Brew espresso quickly. Use when tired.",
        "",
    );
    wait_for_search(&client, "espresso", "quick-skill", true).await;

    // A folder that appears empty is watched from then on: a SKILL.md written into it later,
    // long after the folder's own batch was rescanned, is seen too.
    let before = observer.count("resources/list_changed");
    std::fs::create_dir_all(root.join("late-skill")).unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    write_skill(
        &root,
        "late-skill",
        "Water orchids sparingly. Use when gardening.",
        "",
    );
    observer
        .wait_for_more("resources/list_changed", before)
        .await;
    wait_for_search(&client, "orchids", "late-skill", true).await;
    client.cancel().await.unwrap();
}
