import marimo

__generated_with = "0.25.2"
app = marimo.App()


@app.cell
def _():
    import marimo as mo

    mo.md(
        """
        # nb_hitl in marimo

        A real AgentScope agent tidies a sandbox folder, offline on nb_hitl's
        scripted model. It asks **which file to delete** (AgentScope's
        `AskUser`), then asks your **permission** to delete it: that card
        shows the deletion as a diff (every line of the file removed) and
        offers *Dry run*, which deletes the file in a throw-away copy of the
        folder first. Answer in the card below; the agent resumes in this
        kernel after each click.
        """
    )
    return (mo,)


@app.cell
async def _(mo):
    from nb_hitl import Session
    from nb_hitl.demo import demo_agent

    agent = demo_agent()
    session = Session(agent)
    # start, not `await session.run(...)`: the cell must return so that
    # marimo can pass your clicks to the widget while the reply is parked
    task = session.start("Please tidy up my sandbox folder.")
    widget = session.current.widget
    # cells that read get_status() / get_pending() rerun when a pause opens or
    # is answered (a Python-side trait change does not rerun cells by itself)
    get_status, set_status = mo.state(widget.status)
    get_pending, set_pending = mo.state(widget.pending)
    widget.observe(lambda change: set_status(change["new"]), names="status")
    widget.observe(lambda change: set_pending(change["new"]), names="pending")
    return agent, get_pending, get_status, task, widget


@app.cell
def _(get_pending, get_status, mo):
    mo.md(f"**Reply status:** `{get_status()}` · **pauses waiting for you:** {get_pending()}").callout(
        kind="success" if get_status() == "finished" else "info"
    )
    return


@app.cell
def _(agent, get_status, mo, task):
    mo.stop(get_status() != "finished", mo.md("_The agent's answer shows here when it has finished._"))
    files_left = sorted(p.name for p in agent.sandbox.iterdir())
    mo.md(f"**Agent:** {task.result().get_text_content()}\n\n**Files left:** {', '.join(files_left)}")
    return


if __name__ == "__main__":
    app.run()
