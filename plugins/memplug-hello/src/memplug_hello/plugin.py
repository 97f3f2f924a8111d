"""Hook implementations: registration only, targets are imported lazily by memplug."""

from memplug import hookimpl


@hookimpl
def register_datasets(register):
    register("hello", "memplug_hello.dataset:HelloDataset", description="three tiny conversations")


@hookimpl
def register_agents(register):
    register("hello", "memplug_hello.agent:HelloAgent", description="remembers everything, recalls by word overlap")
